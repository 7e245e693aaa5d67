// The table in a player's hand (issue 47), in headless Chromium against the real engine and
// platform: on a phone with 7 seats the cards and the deciding seat's Raise stay in view; a
// pushed seat shows zero; the deal moves card by card on every deal, the badge only after
// the cards are visible, nothing moves under reduced motion; the checks panel collapses to a
// summary in the player's language; a player whose name is guessed from many addresses gets
// back in with the recovery code.
//
//   node demo/e2e/hand.e2e.mjs      (after cargo build -p reddog -p reddog-demo --bins)
//
// Env: E2E_HAND_ROUNDS (rounds for the motion check, default 15), E2E_MAX_ROUNDS (bound on
// the rounds played to see a push with 7 seats, default 100: P(push) = 32/221 + 1/17·48/50
// ≈ 0.20 a round, so 100 rounds miss one with probability 0.8^100 ≈ 2·10⁻¹⁰).
import { step, assert, eq, servers, launch, waitRound, shownCommitment, atRest, finish, stop, axeSerious } from "./harness.mjs";

const { CATALOGUES } = await import("../static/i18n.js");
const MOTION_ROUNDS = Number(process.env.E2E_HAND_ROUNDS || 15);
const MAX_ROUNDS = Number(process.env.E2E_MAX_ROUNDS || 100);
const lead = (text) => text.split("{")[0];

// Money as the page must write it: Intl in the language, the table's EUR, from minor units.
const decimal = (minor) => { const n = BigInt(minor), a = n < 0n ? -n : n; return `${n < 0n ? "-" : ""}${a / 100n}.${String(a % 100n).padStart(2, "0")}`; };
const euros = (lang, minor) => new Intl.NumberFormat(lang, { style: "currency", currency: "EUR", minimumFractionDigits: 2 }).format(decimal(minor));
const net = (lang, minor) => new Intl.NumberFormat(lang, { style: "currency", currency: "EUR", minimumFractionDigits: 2, signDisplay: "exceptZero" }).format(decimal(minor));

// In the page, from its first script on: per round, the cards' and chips' animations seen
// in any frame, when each card was fully dealt, and every change of the badge
// with whether the cards were visible and still then.
const INSTRUMENT = () => {
  window.motionLog = {};
  window.badgeLog = [];
  const cardsOf = () => ["card1", "card2", "card3"].map((id) => document.getElementById(id)).filter(Boolean);
  const tick = () => {
    const id = document.querySelector("#outcome")?.dataset.roundId;
    if (id) {
      const rec = (window.motionLog[id] ||= { animated: [], chips: 0, visibleAt: {} });
      for (const a of document.getAnimations()) {
        const el = a.effect?.target;
        if (!el) continue;
        if (/^card[123]$/.test(el.id)) {
          if (!rec.animated.includes(el.id)) rec.animated.push(el.id);
          // When the card is fully dealt, on the document's timeline.
          const t = a.effect.getTiming();
          if (a.startTime !== null && !(el.id in rec.visibleAt)) rec.visibleAt[el.id] = a.startTime + t.delay + t.duration;
        }
        if (el.classList?.contains("stack")) rec.chips++;
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  document.addEventListener("DOMContentLoaded", () => {
    const box = document.querySelector("#verify");
    new MutationObserver(() => {
      const v = box.dataset.verdict;
      if (!v || v === "none" || !box.dataset.roundId && v !== "pending") return;
      const cards = cardsOf().filter((el) => el.dataset.card && el.dataset.card !== "none");
      const still = cards.every((el) => !el.getAnimations().some((a) => a.playState === "running") && Number(getComputedStyle(el).opacity) >= 0.99);
      window.badgeLog.push({ verdict: v, round: document.querySelector("#outcome").dataset.roundId, cardsVisible: still });
    }).observe(box, { attributes: true, attributeFilter: ["data-verdict"] });
  });
};

async function signUp(p, url, name) {
  await p.goto(url);
  await p.fill("#login-name", name);
  await p.fill("#login-pin", "2468");
  await p.click("#register-button");
  await p.waitForSelector("#game:not([hidden])");
  await shownCommitment(p);
}

async function seats(p, n) {
  while (await p.isVisible("#remove-seat")) await p.click("#remove-seat");
  await p.click("#clear");
  await p.click('#chips button[data-value="500"]');
  for (let k = 1; k < n; k++) {
    await p.click("#add-seat");
    await p.click('#chips button[data-value="500"]');
  }
  eq(await p.$$eval("#seats .spot", (e) => e.length), n, "spots");
}

// What is inside the device's screen (W × H; with isMobile, innerWidth is not the yardstick).
const inView = (p, W, H) => p.evaluate(({ W, H }) => {
  const inside = (e) => { const b = e.getBoundingClientRect(); return b.width > 0 && b.top >= 0 && b.bottom <= H && b.left >= 0 && b.right <= W; };
  const spot = document.querySelector("#seats .spot.deciding");
  return { raise: inside(document.querySelector("#raise")), raiseEnabled: !document.querySelector("#raise").disabled,
    cards: ["#card1", "#card2", "#card3"].every((s) => inside(document.querySelector(s))),
    spot: spot ? inside(spot) : null, seat: spot?.dataset.seat ?? null, focus: Boolean(spot) && document.activeElement === spot,
    label: document.querySelector("#raise-label").textContent, scrolled: scrollY, height: document.documentElement.scrollHeight };
}, { W, H });

async function main() {
  const { url: URL, engine, platform } = await servers(["--trusted-proxy", "127.0.0.1/32"]);
  const browser = await launch();
  let players = 0;
  const fresh = () => `hand${++players}`;

  // Must show: on a phone, 7 seats, after Deal the first deciding seat's Raise and the cards
  // are on screen together; after each decision the next seat's too, with the focus on its
  // spot. Then, at the same table, rounds until one pushes: every seat shows its net, a push
  // zero.
  for (const [W, H, lang] of [[375, 667, "en"], [375, 667, "de"], [360, 740, "ja"]]) {
    const ctx = await browser.newContext({ viewport: { width: W, height: H }, isMobile: true, hasTouch: true, deviceScaleFactor: 1, locale: lang });
    const p = await ctx.newPage();
    const errors = [];
    p.on("pageerror", (e) => errors.push(String(e)));
    try {
      await signUp(p, URL, fresh());
      await seats(p, 7);
      await step(`${W}x${H} ${lang}, 7 seats: after Deal and after each decision, the deciding seat's Raise and the cards on screen together`, async () => {
        const seen = [];
        let spreads = 0;
        for (let k = 0; k < 40 && spreads < 3; k++) {
          if (await p.isDisabled("#deal")) await p.tap('#chips button[data-value="500"]');
          await p.tap("#deal");
          let r = await waitRound(p);
          if (!r.deciding) continue;
          spreads++;
          for (let d = 0; r.deciding; d++) {
            await atRest(p);
            const v = await inView(p, W, H);
            seen.push(v);
            const C = CATALOGUES[lang];
            assert(v.raise && v.raiseEnabled && v.cards, `decision ${d + 1}: Raise on screen ${v.raise}, enabled ${v.raiseEnabled}, cards on screen ${v.cards} (scrollY ${v.scrolled} of ${v.height})`);
            eq(v.seat, String(d), "the deciding seat");
            eq(v.label, C.raise_seat.replace("{n}", d + 1), "Raise names the seat");
            assert(v.spot && v.focus, `the deciding spot on screen (${v.spot}) and focused (${v.focus})`);
            await p.tap("#stand");
            r = await waitRound(p);
          }
          eq(r.verdict, "verified", `round: ${r.verifyText}`);
        }
        assert(spreads >= 3, `only ${spreads} spreads in 40 rounds`);
        console.log(`        ${seen.length} decisions measured: Raise and the cards on screen together in ${seen.filter((v) => v.raise && v.cards).length}`);
      });

      await step(`${W}x${H} ${lang}, 7 seats: each seat shows its net (win +, loss −), a pushed seat zero; the history's Net column too`, async () => {
        let pushed = null, checked = 0;
        for (let k = 0; k < MAX_ROUNDS && !pushed; k++) {
          if (await p.isDisabled("#deal")) await p.tap('#chips button[data-value="500"]');
          await p.tap("#deal");
          let r = await waitRound(p);
          while (r.deciding) { await p.tap("#stand"); r = await waitRound(p); }
          eq(r.verdict, "verified", `round: ${r.verifyText}`);
          const reveal = JSON.parse(r.reveal);
          const shown = await p.$$eval("#seats .spot .result", (rs) => rs.map((e) => ({ outcome: e.dataset.outcome, text: e.textContent, net: e.querySelector(".net").textContent })));
          eq(shown.length, 7, "a result per seat");
          const C = CATALOGUES[lang];
          reveal.seats.forEach((x, s) => {
            const outcome = x.returned > x.stake ? "win" : x.returned === x.stake ? "push" : "lose";
            const want = net(lang, BigInt(x.returned) - BigInt(x.stake));
            eq(shown[s].outcome, outcome, `seat ${s + 1}'s outcome`);
            eq(shown[s].net, want, `seat ${s + 1}'s net (${outcome})`);
            eq(shown[s].text, `${C[`seat_${outcome}`]} ${want}`, `seat ${s + 1}'s result`);
            checked++;
          });
          if (reveal.seats.every((x) => x.returned === x.stake)) pushed = { roundId: r.roundId, shown, reveal };
        }
        assert(pushed, `no push in ${MAX_ROUNDS} rounds`);
        const zero = net(lang, 0);
        for (const s of pushed.shown) {
          eq(s.net, zero, "a pushed seat's amount");
          assert(!s.net.includes("+") && /0/.test(s.net), `a pushed seat shows zero, not a gain: ${s.net}`);
        }
        await p.goto(`${URL}/history`);
        await p.waitForFunction(() => document.querySelector("#summary").dataset.rounds);
        const row = await p.$eval(`#rounds tbody tr[data-round-id="${pushed.roundId}"]`, (tr) => ({ credited: tr.cells[7].textContent, net: tr.cells[8].textContent }));
        eq(row.net, zero, "the history's net for the pushed round");
        eq(row.credited, euros(lang, pushed.reveal.seats.reduce((a, x) => a + BigInt(x.returned), 0n)), "the history's credit for the pushed round: the bets back");
        console.log(`        ${checked} seat results checked; push shown as ${zero} on all 7 seats`);
      });
      eq(errors.join("; "), "", "page errors");
    } finally {
      await ctx.close();
    }
  }

  // Motion: every deal dealt card by card, the badge only once the cards are visible and
  // still; then the same under reduced motion (and with the Animation option off): nothing
  // moves, the badge is still right.
  for (const [what, options, init, moving] of [
    ["with motion", {}, () => {}, true],
    ["under prefers-reduced-motion", { reducedMotion: "reduce" }, () => {}, false],
    ["with the Animation option off", {}, () => localStorage.setItem("reddog.animation", "off"), false],
  ]) {
    await step(`${what}: ${MOTION_ROUNDS} deals at 375 px, 3 seats: ${moving ? "every deal moves card by card" : "nothing moves"}, the badge after the cards are visible`, async () => {
      const ctx = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1, ...options });
      await ctx.addInitScript(INSTRUMENT);
      await ctx.addInitScript(init);
      const p = await ctx.newPage();
      const errors = [];
      p.on("pageerror", (e) => errors.push(String(e)));
      try {
        await signUp(p, URL, fresh());
        await seats(p, 3);
        const rounds = [];
        for (let k = 0; k < MOTION_ROUNDS; k++) {
          if (await p.isDisabled("#deal")) await p.tap('#chips button[data-value="500"]');
          await p.tap("#deal");
          let r = await waitRound(p);
          while (r.deciding) { await p.tap("#stand"); r = await waitRound(p); }
          eq(r.verdict, "verified", `round ${k + 1}: ${r.verifyText}`);
          rounds.push(r.roundId);
        }
        const { motionLog, badgeLog } = await p.evaluate(() => ({ motionLog: window.motionLog, badgeLog: window.badgeLog }));
        const dealt = rounds.filter((id) => motionLog[id]?.animated.includes("card1") && motionLog[id]?.animated.includes("card2"));
        const inOrder = rounds.filter((id) => { const s = motionLog[id]?.visibleAt || {}; return s.card1 !== undefined && s.card2 !== undefined && s.card1 < s.card2; });
        const chips = rounds.filter((id) => (motionLog[id]?.chips || 0) > 0);
        const early = badgeLog.filter((b) => rounds.includes(b.round) && !b.cardsVisible);
        const spoke = new Set(badgeLog.filter((b) => rounds.includes(b.round) && b.verdict === "verified").map((b) => b.round));
        console.log(`        cards animated in ${dealt.length}/${rounds.length} deals, card 1 shown before card 2 in ${inOrder.length}, chips moved in ${chips.length}; badge changes ${badgeLog.length}, before the cards were visible ${early.length}`);
        eq(spoke.size, rounds.length, "the badge spoke for every round");
        eq(early.length, 0, `badge changes while a card was moving or hidden: ${JSON.stringify(early.slice(0, 3))}`);
        if (moving) {
          eq(dealt.length, rounds.length, "deals whose cards moved");
          eq(inOrder.length, rounds.length, "deals dealt card by card (card 1 shown before card 2)");
          eq(chips.length, rounds.length, "deals whose chips moved");
        } else {
          eq(rounds.filter((id) => motionLog[id]?.animated.length || motionLog[id]?.chips).length, 0, "deals with anything moving");
        }
        eq(errors.join("; "), "", "page errors");
      } finally {
        await ctx.close();
      }
    });
  }

  // The checks panel: collapsed to one line in the player's language (checks passed, staked
  // and credited as money); opened, the table beside it keeps its height and no line shows a
  // verifier identifier or raw minor units for the bet.
  for (const lang of ["en", "de", "ru"]) {
    await step(`the checks panel in ${lang}: a summary with money, the felt's height unchanged when opened, no identifiers`, async () => {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: lang });
      const p = await ctx.newPage();
      try {
        await signUp(p, URL, fresh());
        await seats(p, 2);
        await p.click("#deal");
        let r = await waitRound(p);
        while (r.deciding) { await p.click("#stand"); r = await waitRound(p); }
        eq(r.verdict, "verified", r.verifyText);
        const reveal = JSON.parse(r.reveal);
        const staked = reveal.seats.reduce((a, x) => a + BigInt(x.stake), 0n), back = reveal.seats.reduce((a, x) => a + BigInt(x.returned), 0n);
        const C = CATALOGUES[lang];
        const summary = await p.textContent("#checks-summary");
        const n = await p.$$eval("#verify-checks li", (ls) => ({ all: ls.filter((l) => !l.textContent.startsWith("–")).length, ok: ls.filter((l) => l.textContent.startsWith("✔")).length }));
        const fmt = (v) => new Intl.NumberFormat(lang).format(v);
        eq(summary, C.checks_summary.replace("{passed}", fmt(n.ok)).replace("{total}", fmt(n.all)).replace("{staked}", euros(lang, staked)).replace("{returned}", euros(lang, back)), "the summary");
        eq(n.ok, n.all, "every check passed");
        eq(await p.$eval("#verify-details", (d) => d.open), false, "collapsed");
        const before = await p.$eval(".felt", (e) => e.getBoundingClientRect().height);
        await p.click("#checks-summary");
        const after = await p.$eval(".felt", (e) => e.getBoundingClientRect().height);
        assert(Math.abs(after - before) < 1, `the felt ${before} px tall, ${after} px with the checks open`);
        const lines = await p.$$eval("#verify-checks li", (ls) => ls.map((l) => l.textContent));
        const raw = lines.filter((l) => /seats\[\d\]|^. expected |\bbet \d+\b/.test(l));
        eq(raw.join(" | "), "", "identifiers or raw amounts");
        const betLine = lines.find((l) => l.startsWith(`✔ ${C.cn_seat.replace("{n}", "1").replace("{what}", C.cn_bet)}: `));
        assert(betLine && betLine.includes(euros(lang, reveal.seats[0].bet)), `seat 1's bet line in ${lang} with money: ${betLine}`);
      } finally {
        await ctx.close();
      }
    });
  }

  // axe-core on the phone's new parts: 7 seats deciding (the seat grid, the rail stuck to the
  // foot, the focus on a spot) and settled with the checks open; the sign-in form with the
  // recovery field open; the recovery code shown.
  await step("axe-core at 375 px: no serious or critical violation, 7 seats deciding and settled, the recovery field and code", async () => {
    const ctx = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, bypassCSP: true });
    const p = await ctx.newPage();
    let found = [];
    try {
      await p.goto(URL);
      await p.click("#recovery-box summary");
      found = found.concat((await axeSerious(p)).map((v) => `sign-in: ${v}`));
      await p.fill("#login-name", fresh());
      await p.fill("#login-pin", "2468");
      await p.click("#register-button");
      await p.waitForSelector("#game:not([hidden])");
      await shownCommitment(p);
      assert(await p.isVisible("#recovery-note"), "the recovery code is shown");
      found = found.concat((await axeSerious(p)).map((v) => `recovery code: ${v}`));
      await p.click("#recovery-done");
      await seats(p, 7);
      let decided = false;
      for (let k = 0; k < 20 && !decided; k++) {
        if (await p.isDisabled("#deal")) await p.tap('#chips button[data-value="500"]');
        await p.tap("#deal");
        let r = await waitRound(p);
        if (r.deciding) {
          decided = true;
          await atRest(p);
          found = found.concat((await axeSerious(p)).map((v) => `deciding: ${v}`));
        }
        while (r.deciding) { await p.tap("#stand"); r = await waitRound(p); }
      }
      assert(decided, "no spread in 20 rounds");
      await p.click("#checks-summary");
      await atRest(p);
      found = found.concat((await axeSerious(p)).map((v) => `settled: ${v}`));
      eq(found.length, 0, found.join("\n        "));
    } finally {
      await ctx.close();
    }
  });

  // The way back: a name guessed from many addresses makes a new device wait, in words that say
  // it is not the player's doing, and opens the recovery field; the recovery code from sign-up
  // lets the player in (a new code shown); the player's own browser signs in at once.
  await step("a guessed name: a new device is told why it waits and gets in with the recovery code; the trusted browser at once", async () => {
    const own = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, locale: "en" });
    const away = await browser.newContext({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, locale: "de",
      extraHTTPHeaders: { "x-forwarded-for": "198.18.7.1" } });
    try {
      const a = await own.newPage();
      await signUp(a, URL, "rina");
      assert(await a.isVisible("#recovery-note"), "the recovery code is shown after sign-up");
      const code = (await a.textContent("#recovery-code")).trim();
      assert(/^[0-9A-Z]{4}(-[0-9A-Z]{4}){4}$/.test(code), `a recovery code: ${code}`);
      await a.click("#recovery-done");
      eq(await a.isVisible("#recovery-note"), false, "dismissed");
      // Wrong PINs from ever new addresses, as fast as the name's wait allows, until the
      // wait is at least 8 s (1 + 2 + 4 s of waiting): time for the page's sign-in below.
      let wait = 0;
      for (let k = 1; wait < 8000; k++) {
        assert(k < 100, "the name's wait never reached 8 s");
        const res = await fetch(`${URL}/api/login`, { method: "POST", body: JSON.stringify({ name: "rina", pin: "0000" }),
          headers: { "content-type": "application/json", "x-forwarded-for": `198.18.6.${k}` } });
        const body = await res.json();
        if (res.status === 429) {
          wait = body.retry_after_ms;
          if (wait < 8000) await new Promise((resolve) => setTimeout(resolve, wait + 50));
        }
      }
      const b = await away.newPage();
      await b.goto(URL);
      await b.fill("#login-name", "rina");
      await b.fill("#login-pin", "2468");
      await b.click("#login-button");
      await b.waitForFunction(() => document.querySelector("#login-message").textContent.length > 0);
      const said = await b.textContent("#login-message");
      const D = CATALOGUES.de;
      assert(said.startsWith(lead(D.err_too_many_account)) && said.endsWith(D.err_too_many_account.split("}").pop()), `the wait explained in German: ${said}`);
      eq(await b.$eval("#recovery-box", (d) => d.open), true, "the recovery field is opened");
      await b.fill("#login-recovery", code.toLowerCase());
      await b.click("#login-button");
      await b.waitForSelector("#game:not([hidden])");
      assert(await b.isVisible("#recovery-note"), "a new code is shown");
      eq(await b.textContent("#recovery-lead"), D.recovery_new, "saying the old one is used up");
      const next = (await b.textContent("#recovery-code")).trim();
      assert(/^[0-9A-Z]{4}(-[0-9A-Z]{4}){4}$/.test(next) && next !== code, `a new code: ${next}`);
      // The player's own browser (its device cookie) signs in at once, the name's wait or not.
      await a.click("#logout");
      await a.waitForSelector("#login:not([hidden])");
      await a.fill("#login-name", "rina");
      await a.fill("#login-pin", "2468");
      await a.click("#login-button");
      await a.waitForSelector("#game:not([hidden])");
    } finally {
      await own.close();
      await away.close();
    }
  });

  await browser.close();
  await stop(platform);
  await stop(engine);
}

try {
  await main();
} catch (e) {
  console.log(`  FAIL  hand e2e: ${e?.stack || e}`);
  process.exitCode = 1;
}
const failed = await finish();
process.exit(failed || process.exitCode ? 1 : 0);
