//! `report.html`: the report as one self-contained page — inline CSS and SVG, no script, no
//! network (a Content-Security-Policy forbids any fetch), laid out to print to PDF.

use std::fmt::Write as _;

use super::Report;
use super::agreement::Point;
use super::stats::TestResult;

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;\
color:#111;line-height:1.4}h1{font-size:1.6em}h2{border-bottom:2px solid #333;margin-top:2em}h3{margin-top:1.5em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}td,th{border:1px solid #bbb;padding:2px 6px;\
text-align:left;vertical-align:top}th{background:#eee}td.n{text-align:right;font-variant-numeric:tabular-nums}\
code,.mono{font-family:ui-monospace,monospace;font-size:.85em;word-break:break-all}.pass{color:#0a6b00;\
font-weight:bold}.fail{color:#b00000;font-weight:bold}.verdict{font-size:1.3em;padding:.5em;border:3px solid}\
.note{color:#444;font-size:.9em}svg{background:#fafafa;border:1px solid #ccc}\
@media print{body{max-width:none;margin:0}h2{page-break-before:always}h2.first{page-break-before:avoid}\
svg,table{page-break-inside:avoid}}";

fn pass(ok: bool) -> &'static str {
    if ok { "<span class=\"pass\">PASS</span>" } else { "<span class=\"fail\">FAIL</span>" }
}

fn row(o: &mut String, cells: &[String]) {
    o.push_str("<tr>");
    for c in cells {
        let _ = write!(o, "<td>{c}</td>");
    }
    o.push_str("</tr>\n");
}

fn head(o: &mut String, cells: &[&str]) {
    o.push_str("<table><tr>");
    for c in cells {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr>\n");
}

fn cmd(c: &str) -> String {
    format!("<code>{}</code>", esc(c))
}

/// The convergence chart: simulated RTP and its 99.9 % band against rounds (log scale), and
/// the exact RTP as a line.
pub fn convergence_svg(points: &[Point], exact: f64, title: &str) -> String {
    let (w, h, l, r, t, b) = (720.0, 300.0, 70.0, 20.0, 30.0, 40.0);
    let finite: Vec<&Point> =
        points.iter().filter(|p| p.ci_low.is_finite() && p.ci_high.is_finite() && p.rounds > 0).collect();
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\
         <title>{}</title>",
        esc(title)
    );
    if finite.is_empty() {
        o.push_str("<text x=\"20\" y=\"40\">no data</text></svg>");
        return o;
    }
    let x0 = (finite[0].rounds as f64).log10();
    let x1 = (finite[finite.len() - 1].rounds as f64).log10().max(x0 + 1e-9);
    // Skip the first few points' very wide bands when choosing the y range: show +-4 final widths.
    let last = finite[finite.len() - 1];
    let half = ((last.ci_high - last.ci_low) / 2.0).max(1e-6);
    let (y0, y1) = (exact.min(last.rtp) - 6.0 * half, exact.max(last.rtp) + 6.0 * half);
    let px = |x: f64| l + (x - x0) / (x1 - x0) * (w - l - r);
    let py = |y: f64| t + (1.0 - (y.clamp(y0, y1) - y0) / (y1 - y0)) * (h - t - b);
    let mut band = String::new();
    for p in &finite {
        let _ = write!(band, "{:.1},{:.1} ", px((p.rounds as f64).log10()), py(p.ci_high));
    }
    for p in finite.iter().rev() {
        let _ = write!(band, "{:.1},{:.1} ", px((p.rounds as f64).log10()), py(p.ci_low));
    }
    let line: String =
        finite.iter().map(|p| format!("{:.1},{:.1} ", px((p.rounds as f64).log10()), py(p.rtp))).collect();
    let _ = write!(
        o,
        "<polygon points=\"{band}\" fill=\"#9ecae1\" fill-opacity=\"0.6\"/>\
         <polyline points=\"{line}\" fill=\"none\" stroke=\"#08519c\" stroke-width=\"1.5\"/>\
         <line x1=\"{l}\" x2=\"{}\" y1=\"{ey:.1}\" y2=\"{ey:.1}\" stroke=\"#b00000\" stroke-dasharray=\"6 3\"/>\
         <text x=\"{}\" y=\"{:.1}\" font-size=\"11\" fill=\"#b00000\" text-anchor=\"end\">exact {exact:.6}</text>",
        w - r,
        w - r - 4.0,
        py(exact) - 4.0,
        ey = py(exact)
    );
    // Axes and ticks.
    let _ = write!(
        o,
        "<line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{}\" stroke=\"#333\"/><line x1=\"{l}\" y1=\"{0}\" x2=\"{}\" \
         y2=\"{0}\" stroke=\"#333\"/>",
        h - b,
        w - r
    );
    for k in (x0.ceil() as i32)..=(x1.floor() as i32) {
        let x = px(f64::from(k));
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#333\"/><text x=\"{x:.1}\" y=\"{}\" \
             font-size=\"11\" text-anchor=\"middle\">1e{k}</text>",
            h - b,
            h - b + 5.0,
            h - b + 18.0
        );
    }
    for i in 0..=4 {
        let y = y0 + (y1 - y0) * f64::from(i) / 4.0;
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{y:.5}</text>",
            l - 4.0,
            py(y) + 4.0
        );
    }
    let _ = write!(
        o,
        "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">rounds (log scale); band: 99.9% interval; \
         line: simulated RTP</text><text x=\"{l}\" y=\"18\" font-size=\"13\">{}</text></svg>",
        (l + w - r) / 2.0,
        h - 6.0,
        esc(title)
    );
    o
}

/// A bar chart of a p-value histogram with the uniform expectation as a line.
pub fn histogram_svg(counts: &[u64], title: &str) -> String {
    let (w, h, l, b, t) = (520.0, 240.0, 50.0, 40.0, 30.0);
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / counts.len().max(1) as f64;
    let top = (counts.iter().copied().max().unwrap_or(0) as f64).max(expected) * 1.2 + 1.0;
    let bw = (w - l - 10.0) / counts.len().max(1) as f64;
    let py = |v: f64| t + (1.0 - v / top) * (h - t - b);
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\
         <title>{}</title><text x=\"{l}\" y=\"18\" font-size=\"13\">{}</text>",
        esc(title),
        esc(title)
    );
    for (i, &c) in counts.iter().enumerate() {
        let x = l + i as f64 * bw;
        let _ = write!(
            o,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#6baed6\" stroke=\"#08519c\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\">{c}</text>",
            x + 1.0,
            py(c as f64),
            bw - 2.0,
            h - b - py(c as f64),
            x + bw / 2.0,
            py(c as f64) - 3.0
        );
        let _ = write!(
            o,
            "<text x=\"{x:.1}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:.1}</text>",
            h - b + 14.0,
            i as f64 / counts.len() as f64
        );
    }
    let _ = write!(
        o,
        "<line x1=\"{l}\" x2=\"{}\" y1=\"{ey:.1}\" y2=\"{ey:.1}\" stroke=\"#b00000\" stroke-dasharray=\"6 3\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">p-value (dashed: count expected under the \
         null)</text></svg>",
        w - 10.0,
        (l + w) / 2.0,
        h - 8.0,
        ey = py(expected)
    );
    o
}

fn test_rows(o: &mut String, tests: &[&TestResult]) {
    head(o, &["test", "sample", "statistic", "distribution", "p-value", "min E", "max |z|", "alpha", "result"]);
    for r in tests {
        row(
            o,
            &[
                esc(&r.name),
                format!("{}", r.sample),
                format!("{:.4}", r.statistic),
                esc(&r.distribution),
                format!("{:.6}", r.p_value),
                r.min_expected.map_or("-".into(), |e| format!("{e:.1}")),
                r.max_abs_z.map_or("-".into(), |z| format!("{z:.3}")),
                format!("{:e}", r.alpha),
                pass(r.passed).to_string(),
            ],
        );
    }
    o.push_str("</table>\n");
}

/// Renders the whole report.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let id = &r.identity;
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <title>reddog certification report</title><style>{STYLE}</style></head><body>\n\
         <h1>Red Dog engine: certification report</h1>\
         <p class=\"verdict {}\">Verdict: {} — {} checks passed, {} failed</p>\
         <p>Format <code>{} v{}</code>, plan <b>{}</b>, seed {}, generated {} in {:.0} s. Reproduce the whole report: \
         {}. Every figure below is also in <code>report.json</code>.</p>\n",
        if r.verdict.passed { "pass" } else { "fail" },
        if r.verdict.passed { "PASS" } else { "FAIL" },
        r.verdict.checks_passed,
        r.verdict.checks_failed,
        esc(&r.format),
        r.format_version,
        esc(&r.plan.name),
        r.seed,
        esc(&id.date),
        r.elapsed_seconds,
        cmd(&r.reproduce),
    );
    for w in &r.warnings {
        let _ = writeln!(o, "<p class=\"fail\">Warning: {}</p>", esc(w));
    }

    // Identity.
    o.push_str("<h2 class=\"first\">1. Identity</h2>\n");
    head(&mut o, &["item", "value"]);
    for (k, v) in [
        ("binary SHA-256 (of /proc/self/exe)", id.binary_sha256.clone()),
        ("binary path", id.binary_path.clone()),
        ("version", id.version.clone()),
        ("git commit", id.git_commit.clone()),
        ("build date", id.build_date.clone()),
        ("rustc", id.rustc.clone()),
        ("target", id.target.clone()),
        ("build profile", id.profile.clone()),
        ("Cargo.lock SHA-256 (embedded at build time)", id.cargo_lock_sha256.clone()),
        ("table configuration", id.table_config.clone()),
        ("table configuration SHA-256", id.table_config_sha256.clone().unwrap_or_else(|| "-".into())),
        ("date", id.date.clone()),
        ("command line", id.command_line.join(" ")),
    ] {
        row(&mut o, &[esc(k), format!("<span class=\"mono\">{}</span>", esc(&v))]);
    }
    o.push_str("</table>\n<h3>Rules digests</h3>\n");
    let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(&id.rules_digest_method));
    head(&mut o, &["table", "rules digest"]);
    for (t, d) in &id.rules_digests {
        row(&mut o, &[esc(t), format!("<span class=\"mono\">{}</span>", esc(d))]);
    }
    let _ = write!(
        o,
        "</table>\n<h3>Dependencies ({} packages; SBOM: <code>sbom.cdx.json</code>)</h3><p class=\"note\">{}</p>\
         <details><summary>list</summary>",
        id.dependencies.len(),
        esc(&id.licences)
    );
    head(&mut o, &["name", "version", "kind", "licence", "source", "checksum"]);
    for p in &id.dependencies {
        row(
            &mut o,
            &[
                esc(&p.name),
                esc(&p.version),
                esc(&p.kind),
                esc(&p.licence),
                esc(&p.source),
                format!("<span class=\"mono\">{}</span>", esc(p.checksum.as_deref().unwrap_or("-"))),
            ],
        );
    }
    o.push_str("</table></details>\n");

    // Game.
    o.push_str("<h2>2. Game</h2>\n");
    if let Some(t) = r.tables.first() {
        let _ = writeln!(o, "<p class=\"note\">Method: {}</p>", esc(&t.game.method));
    }
    for t in &r.tables {
        let ru = &t.rules;
        let _ = writeln!(
            o,
            "<h3>Table <code>{}</code>{}</h3><p>{} deck(s); spreads 1–11 pay {} to 1; three of a kind pays {} to 1; \
             bets {} to {} minor units of {} (exponent {}). Reproduce: {} (paytable file <code>{}</code>).</p>",
            esc(&t.id),
            match (ru.sandbox, ru.promotion) {
                (true, _) => " (sandbox: requested deals, never fair rounds)",
                (false, true) => " (a promotion: allow_rtp_over_1)",
                _ => "",
            },
            ru.decks,
            crate::game::Spread::all().map(|s| ru.paytable.spread_odds(s).to_string()).collect::<Vec<_>>().join("/"),
            ru.paytable.three_of_a_kind_odds(),
            ru.min_bet,
            ru.max_bet,
            esc(&ru.currency),
            ru.minor_unit_exponent,
            cmd(&t.reproduce.odds),
            esc(&t.reproduce.paytable_file),
        );
        head(&mut o, &["outcome of a seat", "probability", "decimal"]);
        for (name, f) in &t.game.outcomes {
            row(&mut o, &[esc(name), cmd(&f.fraction), f.decimal.clone()]);
        }
        o.push_str("</table>\n");
        let hands = &t.game.odds["hands"];
        head(&mut o, &["hand", "probability", "decimal"]);
        for k in ["pair", "three_of_a_kind_given_pair", "three_of_a_kind", "consecutive"] {
            row(
                &mut o,
                &[
                    esc(&k.replace('_', " ")),
                    cmd(hands[k]["fraction"].as_str().unwrap_or("")),
                    format!("{}", hands[k]["decimal"]),
                ],
            );
        }
        if let Some(spreads) = hands["spreads"].as_array() {
            for s in spreads {
                row(
                    &mut o,
                    &[
                        format!(
                            "spread {} (pays {}:1); P(win | spread) = {}",
                            s["spread"],
                            s["pays"],
                            esc(s["win_probability"]["fraction"].as_str().unwrap_or("-"))
                        ),
                        cmd(s["probability"]["fraction"].as_str().unwrap_or("")),
                        format!("{}", s["probability"]["decimal"]),
                    ],
                );
            }
        }
        o.push_str("</table>\n");
        head(
            &mut o,
            &[
                "raise rule",
                "raises on",
                "RTP per initial bet",
                "RTP per total wagered",
                "house edge",
                "element of risk",
                "volatility (sd)",
            ],
        );
        for f in &t.game.rules {
            row(
                &mut o,
                &[
                    esc(&f.policy),
                    esc(&format!("{:?}", f.raise_spreads)),
                    format!("{}<br>{}", f.rtp.decimal, cmd(&f.rtp.fraction)),
                    format!("{}<br>{}", f.rtp_per_total_wagered.decimal, cmd(&f.rtp_per_total_wagered.fraction)),
                    f.house_edge.decimal.clone(),
                    f.element_of_risk.decimal.clone(),
                    format!("{:.6}", f.volatility),
                ],
            );
        }
        o.push_str("</table>\n");
        head(&mut o, &["RTP definition", "worst play", "raises on", "best play", "raises on"]);
        for x in &t.game.rtp_range {
            row(
                &mut o,
                &[
                    esc(&x.definition),
                    format!("{}<br>{}", x.worst.decimal, cmd(&x.worst.fraction)),
                    esc(&format!("{:?}", x.worst_raise_spreads)),
                    format!("{}<br>{}", x.best.decimal, cmd(&x.best.fraction)),
                    esc(&format!("{:?}", x.best_raise_spreads)),
                ],
            );
        }
        o.push_str("</table>\n");
        let _ = write!(
            o,
            "<p>Hit frequency (a seat wins): {} = {}. ",
            cmd(&t.game.hit_frequency.fraction),
            t.game.hit_frequency.decimal
        );
        if let Some(lp) = &t.game.largest_payout {
            let _ = write!(
                o,
                "Largest payout: {} returns {} per unit of initial bet; one seat at the maximum bet wins {} (returned {}); \
                 a full table of {} such seats wins {} (returned {}) minor units.",
                esc(&lp.hand),
                lp.per_unit_returned,
                lp.seat_winnings_minor,
                lp.seat_returned_minor,
                lp.seats,
                lp.round_winnings_minor,
                lp.round_returned_minor
            );
        }
        o.push_str("</p>\n");
    }

    // Agreement.
    o.push_str("<h2>3. Agreement: simulation on the production round code</h2>\n");
    if let Some(t) = r.tables.first() {
        let _ = writeln!(o, "<p class=\"note\">Method: {}</p>", esc(&t.agreement.method));
    }
    for t in &r.tables {
        let a = &t.agreement;
        let _ = writeln!(
            o,
            "<h3>Table <code>{}</code>: {} rounds, seed {}, raises on {:?}</h3><p>Reproduce: {}</p>",
            esc(&t.id),
            a.rounds,
            a.seed,
            a.raise_spreads,
            cmd(&t.reproduce.simulate)
        );
        head(&mut o, &["figure", "exact", "simulated", "99.9% interval", "inside"]);
        for c in &a.comparisons {
            row(
                &mut o,
                &[
                    esc(&c.figure),
                    format!("{:.6}<br>{}", c.exact, cmd(&c.exact_fraction)),
                    format!("{:.6}", c.simulated),
                    format!("[{:.6}, {:.6}]", c.ci_low, c.ci_high),
                    pass(c.inside).to_string(),
                ],
            );
        }
        o.push_str("</table>\n");
        let exact = a.comparisons.first().map_or(f64::NAN, |c| c.exact);
        o.push_str(&convergence_svg(
            &a.convergence,
            exact,
            &format!("table {}: simulated RTP converging on the exact RTP", t.id),
        ));
        o.push('\n');
    }

    // Randomness.
    let rd = &r.randomness;
    let _ = write!(
        o,
        "<h2>4. Randomness</h2>\n<p><b>Pre-registered thresholds.</b> {}</p><p class=\"note\">Source: {}</p>\
         <p class=\"note\">Plan: {} whole shoes and {} three-card deals per deck count; {} repeated runs of {} deals; \
         dieharder: {:?}.</p>\n",
        esc(&rd.thresholds),
        esc(&rd.source),
        rd.plan.shoe_deals,
        rd.plan.triple_deals,
        rd.plan.repeat_runs,
        rd.plan.repeat_deals,
        rd.plan.dieharder
    );
    test_rows(&mut o, &rd.tests());
    for d in &rd.decks {
        let _ = write!(o, "<h3>Outcome classes, {} deck(s): observed against the exact odds</h3>", d.decks);
        head(&mut o, &["class", "exact probability", "expected", "observed"]);
        for c in &d.classes {
            row(&mut o, &[esc(&c.class), cmd(&c.probability), format!("{:.1}", c.expected), c.observed.to_string()]);
        }
        o.push_str("</table>\n");
    }
    o.push_str(&histogram_svg(
        &rd.repeated.histogram,
        "p-values of the repeated card x position test (uniform under the null)",
    ));
    let dh = &rd.dieharder;
    let _ = write!(
        o,
        "<h3>dieharder</h3><p>Status: {}. {} passed, {} weak, {} failed.</p>",
        esc(&dh.status),
        dh.passed,
        dh.weak,
        dh.failed
    );
    if !dh.command.is_empty() {
        let _ = write!(o, "<p>Command: {}</p>", cmd(&dh.command));
    }
    if !dh.rows.is_empty() {
        head(&mut o, &["test", "ntup", "p-value", "assessment"]);
        for x in &dh.rows {
            row(&mut o, &[esc(&x.test), esc(&x.ntup), format!("{:.8}", x.p_value), esc(&x.assessment)]);
        }
        o.push_str("</table>\n");
    }
    if !rd.server_seeds.is_empty() {
        o.push_str("<details><summary>server seeds of the experiments</summary>");
        head(&mut o, &["experiment", "server seed"]);
        for (e, s) in &rd.server_seeds {
            row(&mut o, &[esc(e), format!("<span class=\"mono\">{}</span>", esc(s))]);
        }
        o.push_str("</table></details>\n");
    }

    // Protocol.
    let p = &r.protocol;
    let _ = write!(o, "<h2>5. Fair-play protocol</h2>\n<p>{}</p>\n", esc(&p.scheme));
    head(&mut o, &["vector file", "SHA-256", "cases", "passed"]);
    for v in &p.vectors {
        row(
            &mut o,
            &[
                esc(&v.file),
                format!("<span class=\"mono\">{}</span>", esc(&v.sha256)),
                v.cases.to_string(),
                v.passed.to_string(),
            ],
        );
    }
    o.push_str("</table>\n");
    let s = &p.self_test;
    let _ = writeln!(
        o,
        "<h3>Live self-test</h3><p>{}</p><p>{} of {} rounds verified ({}).</p>",
        esc(&s.method),
        s.verified,
        s.rounds,
        esc(&s.per_table.iter().map(|(t, n)| format!("{t}: {n}")).collect::<Vec<_>>().join(", "))
    );
    for f in &s.failures {
        let _ = writeln!(o, "<p class=\"fail\">{}</p>", esc(f));
    }

    // The change against the certification in force, when certified with --against.
    if let Some(c) = &r.change {
        let a = &c.against;
        let _ = writeln!(
            o,
            "<h2>Change against the certified rules in force</h2><p>Against <code>{}</code> (SHA-256 <span \
             class=\"mono\">{}</span>), certified {} by reddog {}, binary <span class=\"mono\">{}</span>.</p>",
            esc(&a.file),
            esc(&a.file_sha256),
            esc(&a.certified_at),
            esc(&a.binary_version),
            esc(&a.binary_sha256)
        );
        head(&mut o, &["table", "status", "field", "before", "after"]);
        for t in &c.tables {
            let rtp = |x: &Option<String>| esc(x.as_deref().unwrap_or("-"));
            row(&mut o, &[esc(&t.table_id), esc(&t.status), "RTP".into(), rtp(&t.rtp_before), rtp(&t.rtp_after)]);
            for f in &t.fields {
                row(&mut o, &[esc(&t.table_id), String::new(), esc(&f.field), esc(&f.before), esc(&f.after)]);
            }
        }
        o.push_str("</table>\n");
        for n in &c.needs_approval {
            let _ = writeln!(o, "<p>Needs approval: {}</p>", esc(n));
        }
        if let Some(note) = &c.approval {
            let _ = writeln!(o, "<p>Approved: {}</p>", esc(note));
        }
    }

    // Verdict.
    o.push_str("<h2>6. Verdict</h2>\n");
    head(&mut o, &["check", "section", "result", "detail"]);
    for c in &r.checks {
        row(&mut o, &[esc(&c.description), esc(&c.section), pass(c.passed).to_string(), esc(&c.detail)]);
    }
    let _ = write!(
        o,
        "</table>\n<p class=\"verdict {}\">{} — {} passed, {} failed</p>\n</body></html>\n",
        if r.verdict.passed { "pass" } else { "fail" },
        if r.verdict.passed { "PASS" } else { "FAIL" },
        r.verdict.checks_passed,
        r.verdict.checks_failed
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    }

    #[test]
    fn charts_are_svg_with_their_data() {
        let pts = [
            Point { rounds: 1000, rtp: 0.9, ci_low: 0.8, ci_high: 1.0 },
            Point { rounds: 100_000, rtp: 0.97, ci_low: 0.96, ci_high: 0.98 },
        ];
        let svg = convergence_svg(&pts, 0.968, "t");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>") && svg.contains("polygon") && svg.contains("1e3"));
        let h = histogram_svg(&[1, 2, 3], "h");
        assert_eq!(h.matches("<rect").count(), 3);
    }
}
