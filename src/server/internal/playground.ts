/**
 * The playground page (`serve --playground`): one HTML page, its style sheet and its script,
 * all served by this server (no CDN). The page holds no data: it reads everything through the
 * API routes, with the key the user types when the server asks for one, so its three assets are
 * the only paths served without a key.
 *
 * The script is `playground/app.ts` of the repository, compiled by the build into
 * `dist/playground/app.js` (shipped in the package).
 */
import { HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"

/** The paths of the page's assets (served without a key: they hold no data). */
export const assetPaths: ReadonlySet<string> = new Set(["/", "/playground/app.js", "/playground/style.css"])

/** Where the compiled script is: beside the built server, or in `dist/` when the server runs from source. */
const scriptCandidates = [
  new URL("../../playground/app.js", import.meta.url),
  new URL("../../../dist/playground/app.js", import.meta.url)
]

let script: Promise<string | undefined> | undefined
const loadScript = () =>
  (script ??= (async () => {
    for (const url of scriptCandidates) {
      const text = await readFile(fileURLToPath(url), "utf8").catch(() => undefined)
      if (text !== undefined) return text
    }
    return undefined
  })())

const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>effect-rag playground</title>
<link rel="stylesheet" href="/playground/style.css">
</head>
<body>
<header>
  <h1>effect-rag playground</h1>
  <form id="key-form" hidden>
    <label>API key <input id="key" type="password" autocomplete="off" placeholder="the server's key"></label>
    <button type="submit">Use key</button>
  </form>
  <p id="status" role="status"></p>
</header>
<main>
  <section id="search-panel">
    <h2>Search</h2>
    <form id="search-form">
      <label>Collection <select id="collection"></select></label>
      <label class="grow">Query <input id="query" type="search" placeholder="type a query" required></label>
      <label>Hits <input id="limit" type="number" min="1" max="100" value="5"></label>
      <fieldset id="modes"><legend>Modes</legend></fieldset>
      <button type="submit" id="search">Search</button>
      <button type="button" id="ask">Ask</button>
    </form>
    <p id="terms"></p>
    <div id="columns" class="columns"></div>
  </section>
  <section id="ask-panel" hidden>
    <h2>Answer</h2>
    <div id="answer" class="answer" aria-live="polite"></div>
    <p id="answer-meta" class="meta"></p>
    <h3>Sources</h3>
    <ol id="sources" class="hits"></ol>
  </section>
  <section id="eval-panel">
    <h2>Evaluation run</h2>
    <p>Open the JSON file that <code>effect-rag eval run --json FILE</code> wrote.</p>
    <input id="eval-file" type="file" accept=".json,application/json">
    <div id="eval"></div>
  </section>
</main>
<script type="module" src="/playground/app.js"></script>
</body>
</html>
`

const css = `:root { --fg: #1d232b; --muted: #5c6773; --line: #d5dbe1; --accent: #1f5fbf; --mark: #ffe28a; --marked: #fff4c7; font-family: system-ui, sans-serif; color: var(--fg); }
body { margin: 0; background: #f6f8fa; }
[hidden] { display: none !important; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem; background: #fff; border-bottom: 1px solid var(--line); flex-wrap: wrap; }
header h1 { font-size: 1.1rem; margin: 0; }
#status { color: var(--muted); margin: 0; }
#status.error { color: #b3261e; }
main { padding: 1rem 1.2rem; display: grid; gap: 1rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .8rem 1rem; }
h2 { font-size: 1rem; margin: 0 0 .6rem; }
h3 { font-size: .95rem; }
form { display: flex; gap: .8rem; align-items: end; flex-wrap: wrap; }
label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); gap: .2rem; }
label.grow { flex: 1; min-width: 14rem; }
input, select, button { font: inherit; padding: .3rem .5rem; }
fieldset { border: 1px solid var(--line); display: flex; gap: .6rem; padding: .2rem .6rem .4rem; font-size: .85rem; }
fieldset label { flex-direction: row; align-items: center; color: var(--fg); font-size: .85rem; }
button { background: var(--accent); color: #fff; border: 0; border-radius: 4px; cursor: pointer; }
#terms { color: var(--muted); font-size: .85rem; }
.columns { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
.column h3 { margin: .2rem 0 .4rem; }
.hits { list-style: none; padding: 0; margin: 0; display: grid; gap: .6rem; }
.hit { border: 1px solid var(--line); border-radius: 4px; padding: .5rem .6rem; scroll-margin-top: 1rem; }
.hit.marked { background: var(--marked); border-color: #d9a400; box-shadow: 0 0 0 2px #d9a400; }
.hit .head { display: flex; gap: .6rem; font-size: .8rem; color: var(--muted); flex-wrap: wrap; }
.hit .n { font-weight: 600; color: var(--fg); }
.hit .passage { margin: .3rem 0 0; font-size: .9rem; line-height: 1.4; white-space: pre-wrap; max-height: 12.6em; overflow: auto; }
.hit.marked .passage { max-height: none; }
mark { background: var(--mark); padding: 0 1px; }
.answer { white-space: pre-wrap; line-height: 1.5; min-height: 1.5rem; }
.answer a.cite { color: var(--accent); font-weight: 600; text-decoration: none; }
.answer .unknown { color: #b3261e; }
.meta { color: var(--muted); font-size: .8rem; }
table { border-collapse: collapse; font-size: .85rem; margin: .6rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.plots { display: flex; gap: 1rem; flex-wrap: wrap; }
.plots figure { margin: 0; }
.plots figcaption { font-size: .8rem; color: var(--muted); text-align: center; }
.sig { color: #1b7f3b; font-weight: 600; }
`

const asset = (body: string, contentType: string) =>
  HttpServerResponse.text(body, {
    contentType,
    headers: {
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      // everything comes from this server: no CDN, no inline script
      "content-security-policy": "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
    }
  })

/** The page's routes: `GET /`, `GET /playground/app.js`, `GET /playground/style.css`. */
export const routes = HttpRouter.empty.pipe(
  HttpRouter.get("/", Effect.succeed(asset(html, "text/html; charset=utf-8"))),
  HttpRouter.get("/playground/style.css", Effect.succeed(asset(css, "text/css; charset=utf-8"))),
  HttpRouter.get(
    "/playground/app.js",
    Effect.map(Effect.promise(loadScript), (text) =>
      text === undefined
        ? HttpServerResponse.text("the playground script is not built: run `npm run build`", { status: 500 })
        : asset(text, "text/javascript; charset=utf-8"))
  )
)
