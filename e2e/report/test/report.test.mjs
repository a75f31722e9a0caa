// Opens stoke's reports in a real browser (Debian's chromium, driven by playwright-core)
// as a person would, offline: report_test.go made the sessions and their reports and
// names them in STOKE_REPORT_CASES (a JSON file), the browser in STOKE_CHROMIUM, and
// where screenshots go in STOKE_REPORT_ARTIFACTS.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const cases = JSON.parse(readFileSync(process.env.STOKE_REPORT_CASES, "utf8"));
const artifacts = process.env.STOKE_REPORT_ARTIFACTS;
mkdirSync(artifacts, { recursive: true });
const mermaidJS = createRequire(import.meta.url).resolve("mermaid/dist/mermaid.min.js");

let browser;
before(async () => {
  browser = await chromium.launch({
    executablePath: process.env.STOKE_CHROMIUM,
    // What the machines here need (no sandbox as root, no GPU, nothing that calls home),
    // and a fresh profile each time (playwright's own).
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
});
after(async () => { await browser?.close(); });

// open loads a report in a new page and records what a report must never do: log an
// error, throw, or ask for anything but its own file.
async function open(file, { javaScript = true, width = 1280 } = {}) {
  const context = await browser.newContext({ javaScriptEnabled: javaScript, viewport: { width, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  const url = pathToFileURL(file).href;
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => { if (r.url() !== url) problems.push(`request: ${r.url()}`); });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  await page.goto(url, { waitUntil: "load" });
  return { page, context, problems };
}

for (const c of cases) {
  test(`${c.name}: the page opens offline, with nothing but its own script`, async () => {
    const { page, context, problems } = await open(c.html);
    try {
      // The script ran (the policy allowed it by its hash): the filter shows.
      assert.equal(await page.locator("#controls").isVisible(), true, "the page's own script did not run");
      assert.equal(await page.evaluate(() => document.scripts.length), 1);
      await page.screenshot({ path: join(artifacts, `${c.name}.png`) });
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  test(`${c.name}: lanes, turns by continuation, the agents table`, async () => {
    const { page, context, problems } = await open(c.html);
    try {
      assert.equal(await page.locator("#timeline .lane").count(), c.agents + 1, "one lane for the parent and one per agent");
      assert.equal(await page.locator('#timeline .lane[data-lane="parent"] .bar').count(), c.parentTurns);
      for (const [kind, n] of Object.entries(c.continuations)) {
        assert.equal(await page.locator(`#timeline .bar[data-continuation="${kind}"]`).count(), n, `${kind} turns`);
      }
      assert.equal(await page.locator("#timeline .track .note").count(), c.notifications, "notification marks");
      assert.equal(await page.locator("table.agents tbody tr").count(), c.agents, "agents table rows");
      // The first group of lanes is open; a session of more than 100 agents folds the rest.
      const groups = await page.locator("#timeline details.group").count();
      assert.equal(groups, Math.max(1, Math.ceil(c.agents / 100)));
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  test(`${c.name}: a turn's bar leads to its tool calls`, async () => {
    const { page, context, problems } = await open(c.html);
    try {
      const first = page.locator('#timeline .lane[data-lane="parent"] .bar').first();
      await first.click();
      const turn = page.locator("#t-parent-1");
      await turn.waitFor({ state: "visible" });
      const calls = turn.locator("table.calls tr.call");
      assert.ok(await calls.count() >= 1, "the parent's first turn lists its tool calls");
      assert.equal(await calls.first().locator("code").textContent(), c.firstTool);
      // The filter keeps the lanes that match.
      const id = await page.locator('#timeline .lane:not([data-lane="parent"])').first().getAttribute("data-lane");
      await page.fill("#filter", id);
      assert.equal(await page.locator("#timeline .lane:not(.filtered)").count(), 1);
      assert.equal(await page.locator("table.agents tbody tr:not(.filtered)").count(), 1);
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  test(`${c.name}: readable without JavaScript`, async () => {
    const { page, context, problems } = await open(c.html, { javaScript: false });
    try {
      assert.equal(await page.locator("#controls").isVisible(), false);
      assert.ok(await page.locator('#timeline .lane[data-lane="parent"] .bar').first().isVisible());
      assert.ok(await page.locator("table.agents").isVisible());
      // A folded section opens with a click, as <details> do.
      await page.locator(`#c-parent > summary`).click();
      assert.ok(await page.locator("#t-parent-1").isVisible());
      await page.screenshot({ path: join(artifacts, `${c.name}-nojs.png`) });
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  if (c.markdown) {
    test(`${c.name}: the Markdown's gantt renders with Mermaid`, async () => {
      const md = readFileSync(c.markdown, "utf8");
      const block = md.match(/```mermaid\n([\s\S]*?)```/);
      assert.ok(block, "no mermaid block");
      const gantt = block[1];
      // The task lines: everything under a section but the keywords.
      const tasks = gantt.split("\n").filter((l) => /^ {4}\S/.test(l) && !/^ {4}(title|dateFormat|axisFormat|section) /.test(l));
      const context = await browser.newContext({ viewport: { width: 1200, height: 600 } });
      const page = await context.newPage();
      const problems = [];
      page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
      page.on("request", (r) => { if (r.url() !== "about:blank") problems.push(`request: ${r.url()}`); });
      try {
        await page.setContent('<!doctype html><div id="out"></div>');
        await page.addScriptTag({ path: mermaidJS });
        const out = await page.evaluate(async (text) => {
          // As GitHub renders it: strict security, no HTML labels.
          window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
          const parsed = await window.mermaid.parse(text);
          const { svg } = await window.mermaid.render("gantt", text);
          document.getElementById("out").innerHTML = svg;
          return { type: parsed.diagramType, bars: document.querySelectorAll("#out rect.task").length };
        }, gantt);
        assert.equal(out.type, "gantt");
        assert.equal(out.bars, tasks.length, "a bar for every task line");
        await page.locator("#out").screenshot({ path: join(artifacts, `${c.name}-gantt.png`) });
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  }

  if (c.xss) {
    test(`${c.name}: what the session says is shown as text, never run`, async () => {
      const { page, context, problems } = await open(c.html);
      try {
        await page.click("#expand");
        const state = await page.evaluate(() => ({
          pwned: window.pwned, images: document.images.length, scripts: document.scripts.length,
          text: document.body.innerText,
        }));
        assert.equal(state.pwned, undefined, "a script of the session ran");
        assert.equal(state.images, 0, "an <img> of the session became an element");
        assert.equal(state.scripts, 1);
        for (const s of c.xss) assert.ok(state.text.includes(s), `the page does not show ${JSON.stringify(s)} as text`);
        await page.screenshot({ path: join(artifacts, `${c.name}-open.png`), fullPage: true });
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }
    });
  }
}
