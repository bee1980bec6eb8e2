// The dashboard's stylesheet: light and dark (prefers-color-scheme), visible focus, and the
// flow chart's stage colours (done, failed, waiting, pending, skipped).
export const STYLES = String.raw`
:root {
  --bg: #ffffff; --fg: #1b1f24; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa;
  --link: #0550ae; --focus: #0969da; --head: #eef1f4;
  --done: #1a7f37; --done-bg: #dafbe1; --failed: #cf222e; --failed-bg: #ffebe9;
  --waiting: #9a6700; --waiting-bg: #fff8c5; --pending: #6e7781; --pending-bg: #f6f8fa;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  font-size: 15px; line-height: 1.45; color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #30363d; --panel: #161b22;
    --link: #58a6ff; --focus: #79c0ff; --head: #1c2128;
    --done: #3fb950; --done-bg: #12261e; --failed: #f85149; --failed-bg: #2d1214;
    --waiting: #d29922; --waiting-bg: #2b2111; --pending: #8b949e; --pending-bg: #161b22;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
a { color: var(--link); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 4px 8px; z-index: 10; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 20px; padding: 8px 20px;
  border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; font-size: 1.1rem; }
nav ul { display: flex; gap: 4px; list-style: none; margin: 0; padding: 0; }
nav a { display: inline-block; padding: 4px 10px; border-radius: 6px; text-decoration: none; }
nav a[aria-current="page"] { background: var(--head); font-weight: 600; color: var(--fg); }
.scope { display: flex; align-items: center; gap: 6px; }
.scope input { width: 13rem; }
.who { margin-left: auto; color: var(--muted); font-size: 0.9rem; }
main { padding: 16px 20px 40px; max-width: 1400px; }
main:focus { outline: none; }
h1 { font-size: 1.4rem; margin: 0.2rem 0 0.8rem; }
h2 { font-size: 1.1rem; margin: 1.4rem 0 0.5rem; }
input, textarea, button, select { font: inherit; color: var(--fg); background: var(--bg);
  border: 1px solid var(--line); border-radius: 6px; padding: 4px 8px; }
button { cursor: pointer; background: var(--head); }
button:hover { border-color: var(--focus); }
.login { max-width: 40rem; }
.login form { display: grid; gap: 8px; }
.login textarea { width: 100%; font-family: ui-monospace, monospace; font-size: 0.85rem; }
.login button { justify-self: start; }
.error { color: var(--failed); font-weight: 600; }
.error:empty { display: none; }
.notice { color: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: 0.92rem; }
th, td { text-align: left; padding: 5px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--head); font-weight: 600; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono { font-family: ui-monospace, monospace; font-size: 0.85rem; }
.ok { color: var(--done); } .bad { color: var(--failed); } .warn { color: var(--waiting); }
.count { color: var(--muted); font-weight: 400; font-size: 0.9rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.flow { list-style: none; padding: 0; margin: 8px 0; display: flex; flex-wrap: wrap; gap: 10px 30px; }
.flow li { position: relative; min-width: 8.5rem; max-width: 12rem; padding: 6px 10px;
  border: 2px solid var(--pending); border-radius: 8px; background: var(--pending-bg); }
.flow li:not(:last-child)::after { content: "\2192"; position: absolute; right: -24px; top: 50%;
  transform: translateY(-50%); color: var(--muted); font-size: 1.1rem; }
.flow .step { font-size: 0.75rem; color: var(--muted); }
.flow .name { display: block; font-weight: 600; }
.flow .comp { display: block; font-size: 0.75rem; color: var(--muted); }
.flow .dur { display: block; font-variant-numeric: tabular-nums; font-size: 0.85rem; }
.flow .why { display: block; font-size: 0.78rem; overflow-wrap: anywhere; }
.flow li[data-state="done"] { border-color: var(--done); background: var(--done-bg); }
.flow li[data-state="failed"] { border-color: var(--failed); background: var(--failed-bg); }
.flow li[data-state="waiting"] { border-color: var(--waiting); background: var(--waiting-bg); border-style: dashed; }
.flow li[data-state="skipped"] { border-style: dotted; opacity: 0.7; }
.state-done { color: var(--done); } .state-failed { color: var(--failed); }
.state-waiting { color: var(--waiting); } .state-pending, .state-skipped { color: var(--pending); }
.legend { display: flex; gap: 14px; font-size: 0.85rem; color: var(--muted); flex-wrap: wrap; }
.source { font-size: 0.85rem; color: var(--muted); }
`;
