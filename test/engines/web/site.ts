/**
 * A small real website on a loopback port, owned by the web engine tests: pages at several
 * depths, a robots.txt that disallows /private/, a sitemap, a redirect, pages in legacy
 * charsets (windows-1252 by header, Shift_JIS by `<meta>` only), a broken link, a slow page,
 * a PDF (bytes copied from the shared fixtures when the server starts), a page over the body
 * cap, a redirect loop and a redirect to a link-local address.
 *
 * Link depths from `/` (breadth-first):
 * - 0: `/`
 * - 1: `/about`, `/blog/`, `/old-page` (301 → `/moved`), `/missing` (404), `/latin1`, `/sjis`,
 *   `/slow`, `/files/report.pdf`; `/private/secret` is disallowed by robots.txt
 * - 2: `/team` (from /about), `/blog/post-1`, `/blog/post-2` (from /blog/)
 * - 3: `/team/deep`
 * - 4: `/team/deeper`
 * - none: `/orphan`, which only the sitemap lists
 *
 * The sitemap lists `/`, `/about`, `/orphan` and `/team/deeper` (four hops deep). Path depths
 * (Firecrawl v1): `/` 0; `/about`, `/blog/`, `/team`, ... 1; `/blog/post-1`, `/team/deep`,
 * `/team/deeper`, `/files/report.pdf` 2.
 */
import { Effect, type Scope } from "effect"
import { readFileSync } from "node:fs"
import { createServer, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import iconv from "iconv-lite"
import { sharedPath } from "../../../src/internal/shared.js"

/** The running site. */
export interface Site {
  /** `http://127.0.0.1:PORT` (no trailing slash). */
  readonly origin: string
  /** Paths requested, in order (query included). */
  readonly requests: Array<string>
  /** User agents seen, by path. */
  readonly userAgents: Map<string, string>
  /** The PDF bytes served at /files/report.pdf. */
  readonly pdf: Uint8Array
}

/**
 * Every page a crawl of the site from `/` attempts (robots.txt disallows `/private/`), as
 * paths with their query, sorted.
 */
export const sitePages: ReadonlyArray<string> = [
  "/",
  "/about",
  "/blog/",
  "/blog/post-1",
  "/blog/post-2?b=2&a=1",
  "/files/report.pdf",
  "/latin1",
  "/missing",
  "/old-page",
  "/orphan",
  "/sjis",
  "/slow",
  "/team",
  "/team/deep",
  "/team/deeper"
].sort()

/** How long /slow takes to answer. */
export const slowMs = 4000

const page = (title: string, body: string, extraHead = "", lang = "en") =>
  `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>${title}</title>` +
  `<meta name="description" content="${title} description">${extraHead}</head>` +
  `<body><header><nav><a href="/">Home</a> | <a href="/about">About</a></nav></header>` +
  `<main>${body}</main><footer>Footer text <a href="/about#footer">about</a></footer></body></html>`

const html = (origin: string): Record<string, string> => ({
  "/": page(
    "Home",
    `<h1>Welcome</h1><p>The <strong>home</strong> page.</p><ul>` +
      `<li><a href="/about">About us</a></li>` +
      `<li><a href="/blog/">Blog</a></li>` +
      `<li><a href="/old-page">Old page</a></li>` +
      `<li><a href="/private/secret">Secret</a></li>` +
      `<li><a href="/missing">Broken</a></li>` +
      `<li><a href="latin1">Latin-1</a></li>` +
      `<li><a href="${origin}/sjis">Shift_JIS</a></li>` +
      `<li><a href="/slow">Slow</a></li>` +
      `<li><a href="/files/report.pdf">Report</a></li>` +
      `<li><a href="/about#team">About (fragment)</a></li>` +
      `<li><a href="https://example.invalid/elsewhere">Elsewhere</a></li>` +
      `<li><a href="mailto:someone@example.invalid">Mail</a></li>` +
      `</ul>`
  ),
  "/about": page(
    "About",
    `<h1>About</h1><p>We write <em>tests</em>. Meet <a href="/team">the team</a>.</p>` +
      `<table><tr><th>Name</th><th>Role</th></tr><tr><td>Ada</td><td>Lead</td></tr></table>` +
      `<p><img src="data:image/png;base64,iVBORw0KGgo=" alt="inline"><img src="/logo.png" alt="logo"></p>`
  ),
  "/team": page("Team", `<h1>Team</h1><p><a href="/team/deep">Deeper</a></p>`),
  "/team/deep": page("Deep", `<h1>Deep</h1><p><a href="/team/deeper">Even deeper</a></p>`),
  "/team/deeper": page("Deeper", `<h1>Deeper</h1><p>The bottom.</p>`),
  "/blog": page(
    "Blog",
    `<h1>Blog</h1><p><a href="/blog/post-1">Post 1</a> <a href="post-2?b=2&a=1">Post 2</a> ` +
      `<a href="/blog/post-2?a=1&b=2">Post 2 again</a> <a href="/blog/">Blog again</a></p>`
  ),
  "/blog/post-1": page("Post 1", `<article><h1>Post 1</h1><p>First post.</p><p><a href="/">Home</a></p></article>`),
  "/blog/post-2": page("Post 2", `<article><h1>Post 2</h1><p>Second post.</p></article>`),
  "/moved": page("Moved", `<h1>Moved</h1><p>The page moved here.</p>`),
  "/orphan": page("Orphan", `<h1>Orphan</h1><p>Only the sitemap links here.</p>`),
  "/private/secret": page("Secret", `<h1>Secret</h1>`),
  "/slow": page("Slow", `<h1>Slow</h1><p>Worth the wait.</p>`)
})

const send = (res: ServerResponse, status: number, type: string, body: string | Uint8Array, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": type, ...headers })
  res.end(body)
}

/** Starts the site on 127.0.0.1 (random port); stops it when the scope closes. */
export const startSite: Effect.Effect<Site, never, Scope.Scope> = Effect.acquireRelease(
  Effect.async<{ site: Site; close: () => void }>((resume) => {
    const pdf = new Uint8Array(readFileSync(sharedPath("fixtures", "docs", "pdf", "helloworld-bad-xref.pdf")))
    const requests: Array<string> = []
    const userAgents = new Map<string, string>()
    const timers = new Set<NodeJS.Timeout>()
    let origin = ""
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1")
      requests.push(url.pathname + url.search)
      userAgents.set(url.pathname, String(req.headers["user-agent"] ?? ""))
      const path = url.pathname.length > 1 ? url.pathname.replace(/\/$/, "") : url.pathname
      const pages = html(origin)
      switch (path) {
        case "/robots.txt":
          return send(
            res,
            200,
            "text/plain",
            `User-agent: *\nDisallow: /private/\n\nUser-agent: blocked-bot\nDisallow: /\n\nSitemap: ${origin}/sitemap.xml\n`
          )
        case "/sitemap.xml":
          return send(
            res,
            200,
            "application/xml",
            `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
              `<url><loc>${origin}/</loc></url><url><loc>${origin}/about</loc></url>` +
              `<url><loc>${origin}/orphan</loc></url><url><loc>${origin}/team/deeper</loc></url></urlset>`
          )
        case "/old-page":
          res.writeHead(301, { location: "/moved" })
          return res.end()
        case "/loop":
          res.writeHead(302, { location: "/loop" })
          return res.end()
        case "/to-metadata":
          res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" })
          return res.end()
        case "/latin1":
          return send(
            res,
            200,
            "text/html; charset=windows-1252",
            iconv.encode(page("Caf\u00e9", "<h1>Caf\u00e9</h1><p>Na\u00efve cr\u00e8me br\u00fbl\u00e9e \u2014 \u20ac5.</p>", "", "fr").replace('<meta charset="utf-8">', ""), "windows-1252")
          )
        case "/sjis":
          return send(
            res,
            200,
            "text/html",
            iconv.encode(
              page("\u65e5\u672c\u8a9e", "<h1>\u65e5\u672c\u8a9e</h1><p>\u3053\u3093\u306b\u3061\u306f\u4e16\u754c</p>", "", "ja")
                .replace('<meta charset="utf-8">', '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'),
              "shift_jis"
            )
          )
        case "/files/report.pdf":
          return send(res, 200, "application/pdf", pdf)
        case "/big":
          return send(res, 200, "text/html", page("Big", `<p>${"x".repeat(200_000)}</p>`))
        case "/plain.txt":
          return send(res, 200, "text/plain; charset=utf-8", "Just text.\n")
        case "/slow": {
          const timer = setTimeout(() => {
            timers.delete(timer)
            if (!res.destroyed) send(res, 200, "text/html; charset=utf-8", pages["/slow"]!)
          }, slowMs)
          timers.add(timer)
          return
        }
        default: {
          const body = pages[path]
          if (body === undefined) return send(res, 404, "text/html; charset=utf-8", page("Not found", "<h1>Not found</h1>"))
          return send(res, 200, "text/html; charset=utf-8", body)
        }
      }
    })
    server.listen(0, "127.0.0.1", () => {
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      resume(
        Effect.succeed({
          site: { origin, requests, userAgents, pdf },
          close: () => {
            for (const t of timers) clearTimeout(t)
            server.closeAllConnections()
            server.close()
          }
        })
      )
    })
  }),
  ({ close }) => Effect.sync(close)
).pipe(Effect.map(({ site }) => site))
