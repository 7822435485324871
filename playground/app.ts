/**
 * The playground page's script (served by `effect-rag serve --playground` as
 * `/playground/app.js`). Plain DOM, no framework, nothing from elsewhere: it talks to the
 * server's collection routes with the key the user typed (when the server asks for one).
 *
 * - Search: one column per chosen mode, each hit with its score, source, page and the query's
 *   analysed terms marked in the passage (the server's `highlight` ranges).
 * - Ask: the answer streamed (`stream: true`), its citations linked to the numbered sources;
 *   a click on a citation scrolls its passage into view and marks it.
 * - Evaluation: a file written by `eval run --json`, as a table and one bar plot per metric
 *   with the 95 % intervals.
 */

// =============================================================================
// Wire shapes (what the routes answer)
// =============================================================================

type Span = readonly [number, number]

interface Source {
  readonly n: number
  readonly id: string
  readonly documentId: string
  readonly score: number
  readonly text: string
  readonly source: string
  readonly page?: number | null
  readonly place?: string | null
  readonly title?: string | null
  readonly highlights?: ReadonlyArray<Span>
}

interface QueryResult {
  readonly mode: string
  readonly reranked: boolean
  readonly terms?: ReadonlyArray<string>
  readonly hits: ReadonlyArray<Source>
}

interface CollectionInfo {
  readonly collection: string
  readonly embedding: string | null
  readonly modes: ReadonlyArray<string>
  readonly rerank: boolean
  readonly ask: boolean
}

interface Citation {
  readonly n: number
  readonly offset: number
  readonly source?: Source | null
}

interface Answer {
  readonly text: string
  readonly model: string
  readonly sources: ReadonlyArray<Source>
  readonly cited: ReadonlyArray<Source>
  readonly citations: ReadonlyArray<Citation>
  readonly unknownCitations: ReadonlyArray<number>
}

type AskEvent =
  | { readonly type: "sources"; readonly round: number; readonly query: string; readonly sources: ReadonlyArray<Source> }
  | { readonly type: "tool_call"; readonly round: number; readonly name: string; readonly query: string }
  | { readonly type: "delta"; readonly text: string }
  | { readonly type: "done"; readonly answer: Answer }
  | { readonly type: "error"; readonly error: { readonly message: string } }

interface Interval {
  readonly mean: number
  readonly lo: number
  readonly hi: number
}

interface Difference extends Interval {
  readonly significant: boolean
}

interface SettingResult {
  readonly name: string
  readonly collection: string
  readonly mode: string
  readonly reranked: boolean
  readonly summary: Readonly<Record<string, Interval | number>>
  readonly vsFirst?: Readonly<Record<string, Difference>> | null
}

interface RunReport {
  readonly format: string
  readonly set: { readonly id: string; readonly method: string | null; readonly model: string | null; readonly queries: number }
  readonly recallK?: number
  readonly resamples: number
  readonly seed: number
  readonly createdAt: string
  readonly settings: ReadonlyArray<SettingResult>
}

// =============================================================================
// DOM helpers
// =============================================================================

const byId = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id)
  if (el === null) throw new Error(`the page has no #${id}`)
  return el as T
}

const el = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Readonly<Record<string, string>> = {},
  ...children: ReadonlyArray<Node | string>
): HTMLElementTagNameMap[K] => {
  const e = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v)
  for (const c of children) e.append(c)
  return e
}

const status = (text: string, error = false) => {
  const s = byId("status")
  s.textContent = text
  s.classList.toggle("error", error)
}

/** The text with its `[start, end)` ranges wrapped in `<mark>` (text nodes only: nothing is parsed as HTML). */
const marked = (text: string, spans: ReadonlyArray<Span> = []): DocumentFragment => {
  const out = document.createDocumentFragment()
  let at = 0
  for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (start < at || end > text.length || end <= start) continue
    out.append(text.slice(at, start), el("mark", {}, text.slice(start, end)))
    at = end
  }
  out.append(text.slice(at))
  return out
}

const placeOf = (s: Source): string => s.place ?? (s.page !== undefined && s.page !== null ? `page ${s.page}` : "")

/** One hit or source as a list item: number, score, source, place, title, and the marked passage. */
const hitItem = (s: Source, id: string): HTMLLIElement =>
  el(
    "li",
    { class: "hit", id, "data-n": String(s.n) },
    el(
      "div",
      { class: "head" },
      el("span", { class: "n" }, `[${s.n}]`),
      el("span", { class: "score", title: "score" }, s.score.toFixed(3)),
      el("span", { class: "source" }, s.source),
      el("span", { class: "place" }, placeOf(s)),
      el("span", { class: "title" }, s.title ?? "")
    ),
    el("p", { class: "passage" }, marked(s.text, s.highlights))
  )

// =============================================================================
// The API, with the key
// =============================================================================

const keyStore = "effect-rag-playground-key"
let key: string | null = sessionStorage.getItem(keyStore)

class NeedsKey extends Error {}

const api = async (path: string, init: RequestInit = {}): Promise<Response> => {
  const headers = new Headers(init.headers)
  if (key !== null) headers.set("authorization", `Bearer ${key}`)
  if (init.body !== undefined) headers.set("content-type", "application/json")
  const response = await fetch(path, { ...init, headers })
  if (response.status === 401) {
    byId("key-form").hidden = false
    throw new NeedsKey(key === null ? "this server needs an API key: type it above" : "the server refused this key: type another")
  }
  if (!response.ok) {
    const body = await response.json().catch(() => undefined) as { error?: { message?: string } } | undefined
    throw new Error(body?.error?.message ?? `${response.status} ${response.statusText}`)
  }
  return response
}

const json = async <T>(path: string, init?: RequestInit): Promise<T> => (await api(path, init)).json() as Promise<T>

const fail = (e: unknown) => status(e instanceof Error ? e.message : String(e), true)

// =============================================================================
// Collections and modes
// =============================================================================

let info: CollectionInfo | undefined

/** The columns a collection offers: its modes, and its default mode reranked when a reranker is there. */
const columnsOf = (i: CollectionInfo): Array<{ readonly label: string; readonly mode: string; readonly rerank: boolean }> => [
  ...i.modes.map((mode) => ({ label: mode, mode, rerank: false })),
  ...(i.rerank ? [{ label: `${i.modes.includes("hybrid") ? "hybrid" : "fulltext"} + rerank`, mode: i.modes.includes("hybrid") ? "hybrid" : "fulltext", rerank: true }] : [])
]

const chosenColumns = () => {
  if (info === undefined) return []
  const boxes = [...byId("modes").querySelectorAll<HTMLInputElement>("input[type=checkbox]")]
  return columnsOf(info).filter((_, i) => boxes[i]?.checked === true)
}

const loadCollection = async (name: string) => {
  info = await json<CollectionInfo>(`/v1/collections/${encodeURIComponent(name)}`)
  const fieldset = byId("modes")
  fieldset.replaceChildren(el("legend", {}, "Modes"))
  const columns = columnsOf(info)
  // side by side by default: full text and the best other mode (at most three columns)
  const preselected = new Set(["fulltext", "hybrid", ...(info.rerank ? [columns.at(-1)!.label] : [])])
  for (const c of columns) {
    const box = el("input", { type: "checkbox", value: c.label, name: "mode" })
    box.checked = preselected.has(c.label)
    fieldset.append(el("label", {}, box, c.label))
  }
  const ask = byId<HTMLButtonElement>("ask")
  ask.disabled = !info.ask
  ask.title = info.ask ? "ask the chat model about this collection" : "this server has no chat model (serve --gateway)"
  status(`${info.collection}: ${info.modes.join(", ")}${info.rerank ? ", rerank" : ""}${info.embedding ? ` (vectors of ${info.embedding})` : ""}${info.ask ? "; ask" : ""}`)
}

const loadCollections = async () => {
  const list = await json<{ data: ReadonlyArray<{ name: string }> }>("/v1/collections")
  const select = byId<HTMLSelectElement>("collection")
  select.replaceChildren(...list.data.map((c) => el("option", { value: c.name }, c.name)))
  if (list.data.length === 0) {
    status("no collection this key may read: ingest one (effect-rag ingest … --db DIR)", true)
    return
  }
  await loadCollection(select.value)
}

// =============================================================================
// Search
// =============================================================================

const search = async () => {
  const collection = byId<HTMLSelectElement>("collection").value
  const query = byId<HTMLInputElement>("query").value.trim()
  const limit = Number(byId<HTMLInputElement>("limit").value) || 5
  const columns = chosenColumns()
  if (query === "" || columns.length === 0) return status("type a query and choose at least one mode", true)
  status("searching…")
  const results = await Promise.all(columns.map((c) =>
    json<QueryResult>(`/v1/collections/${encodeURIComponent(collection)}/query`, {
      method: "POST",
      body: JSON.stringify({ query, limit, mode: c.mode, rerank: c.rerank, highlight: true })
    })
  ))
  byId("terms").textContent = `analysed terms: ${(results[0]?.terms ?? []).join(", ") || "(none: only stop words)"}`
  byId("columns").replaceChildren(...results.map((r, i) => {
    const label = columns[i]!.label
    const slug = label.replace(/[^a-z]+/g, "-")
    return el(
      "div",
      { class: "column", "data-mode": label },
      el("h3", {}, `${label} · ${r.hits.length} hit${r.hits.length === 1 ? "" : "s"}`),
      el("ol", { class: "hits" }, ...r.hits.map((h) => hitItem(h, `hit-${slug}-${h.n}`)))
    )
  }))
  status(`${collection}: ${columns.length} mode(s) searched`)
}

// =============================================================================
// Ask, streamed
// =============================================================================

const known = new Set<number>()

/** Marks the source of citation `n` and scrolls it into view. */
const showSource = (n: number) => {
  for (const m of document.querySelectorAll("#sources .hit.marked")) m.classList.remove("marked")
  const target = document.getElementById(`source-${n}`)
  if (target === null) return
  target.classList.add("marked")
  target.scrollIntoView({ behavior: "smooth", block: "center" })
}

const bracket = /\[([\d\s,;–-]+)\]/g

/** The answer text with each cited number a link to its source (a number with no source in red). */
const renderAnswer = (text: string) => {
  const out = document.createDocumentFragment()
  let at = 0
  for (const m of text.matchAll(bracket)) {
    out.append(text.slice(at, m.index))
    out.append("[")
    const inner = m[1]!
    for (const part of inner.split(/(\d+)/)) {
      if (!/^\d+$/.test(part)) {
        out.append(part)
        continue
      }
      const n = Number(part)
      if (known.has(n)) {
        const a = el("a", { class: "cite", href: `#source-${n}`, "data-n": part }, part)
        a.addEventListener("click", (e) => {
          e.preventDefault()
          showSource(n)
        })
        out.append(a)
      } else {
        out.append(el("span", { class: "unknown", title: "no source has this number" }, part))
      }
    }
    out.append("]")
    at = m.index + m[0].length
  }
  out.append(text.slice(at))
  byId("answer").replaceChildren(out)
}

/** The `data:` events of a `text/event-stream` body, as they arrive. */
async function* sseEvents(response: Response): AsyncGenerator<AskEvent> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += value
    let end: number
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n")
      if (data !== "") yield JSON.parse(data) as AskEvent
    }
  }
}

const ask = async () => {
  const collection = byId<HTMLSelectElement>("collection").value
  const question = byId<HTMLInputElement>("query").value.trim()
  if (question === "") return status("type a question", true)
  const mode = chosenColumns().find((c) => !c.rerank)?.mode
  const panel = byId("ask-panel")
  panel.hidden = false
  known.clear()
  byId("sources").replaceChildren()
  byId("answer-meta").textContent = ""
  let text = ""
  renderAnswer(text)
  status("asking…")
  const response = await api(`/v1/collections/${encodeURIComponent(collection)}/ask`, {
    method: "POST",
    body: JSON.stringify({ question, ...(mode ? { mode } : {}), highlight: true, stream: true })
  })
  for await (const event of sseEvents(response)) {
    switch (event.type) {
      case "sources":
        for (const s of event.sources) {
          if (known.has(s.n)) continue
          known.add(s.n)
          byId("sources").append(hitItem(s, `source-${s.n}`))
        }
        break
      case "tool_call":
        byId("answer-meta").textContent = `the model searched: ${event.query}`
        break
      case "delta":
        text += event.text
        renderAnswer(text)
        break
      case "done": {
        const a = event.answer
        // the final sources carry the question's marks too
        for (const s of a.sources) {
          const item = document.getElementById(`source-${s.n}`)
          item?.replaceWith(hitItem(s, `source-${s.n}`))
        }
        renderAnswer(a.text)
        byId("answer-meta").textContent = `${a.model}: ${a.cited.length} source(s) cited of ${a.sources.length}` +
          (a.unknownCitations.length > 0 ? `; cited numbers with no source: ${a.unknownCitations.join(", ")}` : "")
        status("answered")
        break
      }
      case "error":
        status(`the answer stopped: ${event.error.message}`, true)
        break
    }
  }
}

// =============================================================================
// Evaluation run
// =============================================================================

const isInterval = (v: Interval | number | undefined): v is Interval => typeof v === "object" && v !== null && "mean" in v

const fmt = (x: number) => x.toFixed(3)
const signed = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(3)}`

const svg = <K extends keyof SVGElementTagNameMap>(tag: K, attrs: Readonly<Record<string, string | number>>, text?: string) => {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag)
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v))
  if (text !== undefined) e.textContent = text
  return e
}

/** One metric's bars (the means) with their 95 % intervals as whiskers, on a 0-1 scale. */
const plot = (metric: string, title: string, settings: ReadonlyArray<SettingResult>): HTMLElement => {
  const bar = 46
  const gap = 18
  const h = 160
  const top = 10
  const left = 34
  const w = left + settings.length * (bar + gap) + gap
  const y = (v: number) => top + (1 - Math.max(0, Math.min(1, v))) * (h - top - 30)
  const s = svg("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}`, role: "img", "aria-label": `${title} by setting` })
  for (const t of [0, 0.5, 1]) {
    s.append(svg("line", { x1: left - 4, x2: w, y1: y(t), y2: y(t), stroke: "#d5dbe1" }))
    s.append(svg("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end", "font-size": 10, fill: "#5c6773" }, String(t)))
  }
  settings.forEach((setting, i) => {
    const v = setting.summary[metric]
    if (!isInterval(v)) return
    const x = left + gap + i * (bar + gap)
    const cx = x + bar / 2
    s.append(svg("rect", { x, y: y(v.mean), width: bar, height: y(0) - y(v.mean), fill: i === 0 ? "#8fb3e8" : "#1f5fbf", class: "bar", "data-setting": setting.name }))
    s.append(svg("line", { x1: cx, x2: cx, y1: y(v.hi), y2: y(v.lo), stroke: "#1d232b", "stroke-width": 1.5, class: "interval" }))
    for (const end of [v.lo, v.hi]) s.append(svg("line", { x1: cx - 7, x2: cx + 7, y1: y(end), y2: y(end), stroke: "#1d232b", "stroke-width": 1.5 }))
    s.append(svg("text", { x: cx, y: h - 14, "text-anchor": "middle", "font-size": 10 }, setting.name))
    s.append(svg("text", { x: cx, y: h - 3, "text-anchor": "middle", "font-size": 10, fill: "#5c6773" }, fmt(v.mean)))
  })
  const figure = el("figure", { class: "plot", "data-metric": metric })
  figure.append(s, el("figcaption", {}, `${title}: mean and 95 % interval`))
  return figure
}

const showRun = (report: RunReport) => {
  if (report.format !== "effect-rag-eval-run" || !Array.isArray(report.settings) || report.settings.length === 0) {
    throw new Error("not an eval run: open the file `effect-rag eval run --json FILE` wrote")
  }
  const first = report.settings[0]!
  const metrics = Object.keys(first.summary).filter((k) => isInterval(first.summary[k]))
  // the command line's names of the metrics
  const label = (m: string) =>
    m === "ndcg@10" ? "nDCG@10" : m === "mrr@10" ? "MRR@10" : m === "recall" && report.recallK !== undefined ? `Recall@${report.recallK}` : m
  const head = el("tr", {}, el("th", {}, "setting"), ...metrics.map((m) => el("th", {}, label(m))), el("th", {}, "p50 ms"), el("th", {}, "p95 ms"))
  const rows = report.settings.map((s) =>
    el(
      "tr",
      { "data-setting": s.name },
      el("td", {}, s.name),
      ...metrics.map((m) => {
        const v = s.summary[m]
        return el("td", {}, isInterval(v) ? `${fmt(v.mean)} [${fmt(v.lo)}, ${fmt(v.hi)}]` : "")
      }),
      el("td", {}, String(s.summary["p50_ms"] ?? "")),
      el("td", {}, String(s.summary["p95_ms"] ?? ""))
    )
  )
  const diffs = report.settings.slice(1).map((s) =>
    el(
      "tr",
      {},
      el("td", {}, `${s.name} − ${first.name}`),
      ...metrics.map((m) => {
        const d = s.vsFirst?.[m]
        if (d === undefined) return el("td", {}, "")
        const cell = el("td", {}, `${signed(d.mean)} [${signed(d.lo)}, ${signed(d.hi)}]${d.significant ? " *" : ""}`)
        if (d.significant) cell.classList.add("sig")
        return cell
      })
    )
  )
  byId("eval").replaceChildren(
    el("p", { class: "meta" }, `${report.set.queries} queries (${report.set.method ?? "unknown method"}${report.set.model ? `, ${report.set.model}` : ""}), set ${report.set.id}; 95 % intervals by paired bootstrap (${report.resamples} resamples, seed ${report.seed}); ${report.createdAt}`),
    el("table", { id: "eval-table" }, head, ...rows),
    ...(diffs.length > 0
      ? [el("table", { id: "eval-diffs" }, el("tr", {}, el("th", {}, "difference with the first"), ...metrics.map((m) => el("th", {}, label(m)))), ...diffs),
        el("p", { class: "meta" }, "* significant: the 95 % interval of the paired difference excludes 0")]
      : []),
    el("div", { class: "plots" }, ...metrics.map((m) => plot(m, label(m), report.settings)))
  )
}

// =============================================================================
// Wiring
// =============================================================================

const run = (f: () => Promise<void>) => () => void f().catch(fail)

byId("key-form").addEventListener("submit", (e) => {
  e.preventDefault()
  key = byId<HTMLInputElement>("key").value.trim() || null
  if (key === null) sessionStorage.removeItem(keyStore)
  else sessionStorage.setItem(keyStore, key)
  byId("key-form").hidden = true
  run(loadCollections)()
})
byId("collection").addEventListener("change", run(() => loadCollection(byId<HTMLSelectElement>("collection").value)))
byId("search-form").addEventListener("submit", (e) => {
  e.preventDefault()
  run(search)()
})
byId("ask").addEventListener("click", run(ask))
byId<HTMLInputElement>("eval-file").addEventListener("change", run(async () => {
  const file = byId<HTMLInputElement>("eval-file").files?.[0]
  if (file === undefined) return
  try {
    showRun(JSON.parse(await file.text()) as RunReport)
    status(`evaluation run ${file.name}`)
  } catch (e) {
    throw new Error(`${file.name}: ${e instanceof Error ? e.message : String(e)}`)
  }
}))
run(loadCollections)()

// a module: its names stay out of the page's global scope
export {}
