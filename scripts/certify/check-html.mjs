// Opens a certification report.html in headless Chromium (Debian's chromium driven by npm
// playwright-core) and checks what a reader would see: no console errors or page errors,
// no network request (the page is self-contained), at least one chart (an inline <svg>) and
// the verdict. Usage: node scripts/certify/check-html.mjs DIR/report.html
// Prints one line per check and exits 1 if any failed.
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TOOLS = process.env.E2E_TOOLS || path.join(ROOT, ".tools/e2e");
const { chromium } = createRequire(path.join(TOOLS, "package.json"))("playwright-core");
const file = path.resolve(process.argv[2]);

let failed = 0;
const check = (name, ok, detail = "") => {
  if (!ok) failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `: ${detail}` : ""}`);
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const errors = [];
  const requests = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") errors.push(`${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e}`));
  page.on("request", (r) => { if (!r.url().startsWith("file:")) requests.push(r.url()); });
  const url = pathToFileURL(file).href;
  await page.goto(url, { waitUntil: "load", timeout: 30000 });
  const svgs = await page.locator("svg").count();
  const bands = await page.locator("svg polygon").count();
  const verdict = (await page.locator("p.verdict").first().textContent()) || "";
  const title = await page.title();
  check(`${path.basename(path.dirname(file))}: the page loads with no console errors or warnings`, errors.length === 0, errors.join("; "));
  check(`${path.basename(path.dirname(file))}: no network request`, requests.length === 0, requests.join(", "));
  check(`${path.basename(path.dirname(file))}: at least one chart (inline svg)`, svgs >= 1 && bands >= 1, `${svgs} svg, ${bands} interval bands`);
  check(`${path.basename(path.dirname(file))}: the verdict is shown and is PASS`, verdict.includes("PASS"), verdict.trim());
  check(`${path.basename(path.dirname(file))}: title`, title.includes("certification"), title);
  const pdf = await page.pdf({ format: "A4" });
  check(`${path.basename(path.dirname(file))}: prints to PDF`, pdf.length > 10000 && pdf.subarray(0, 5).toString() === "%PDF-", `${pdf.length} bytes`);
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
