/**
 * A website of large pages on a loopback port, for the memory tests and the soak benchmark:
 * `/p/` links to `/p/0` … `/p/{n-1}`, each page `minBytes` to `maxBytes` of generated HTML
 * text (paragraphs of pseudo-random words, different per page). Pages are streamed in 64 KiB
 * blocks, so serving them costs the test process little memory. No robots.txt, no sitemap
 * (both 404).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"

/** Options of the large site. */
export interface LargeSiteOptions {
  /** Pages (default 60). */
  readonly pages?: number
  /** Smallest page in bytes (default 4 MB). */
  readonly minBytes?: number
  /** Largest page in bytes (default 8 MB). */
  readonly maxBytes?: number
}

/** The running site. */
export interface LargeSite {
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string
  /** The index page that links to every page. */
  readonly start: string
  /** Pages served. */
  readonly pages: number
  /** The size of page `i` in bytes (approximately: whole blocks). */
  readonly sizeOf: (i: number) => number
  /** Requests answered so far, by path. */
  readonly requests: Array<string>
  readonly close: () => Promise<void>
}

const words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma " +
  "tau upsilon phi chi psi omega crawl page memory bound spill status batch limit").split(" ")

const blockBytes = 64 * 1024

/** A 64 KiB block of paragraphs, seeded. */
const block = (seed: number): Buffer => {
  let k = seed * 2654435761 >>> 0
  const parts: Array<string> = []
  let n = 0
  while (n < blockBytes - 600) {
    let p = "<p>"
    for (let j = 0; j < 60; j++) {
      k = (Math.imul(k, 1103515245) + 12345) >>> 0
      p += `${words[k % words.length]} `
    }
    p += "</p>\n"
    parts.push(p)
    n += p.length
  }
  return Buffer.from(parts.join("").padEnd(blockBytes, " "))
}

/** Starts the site on 127.0.0.1 (any free port). */
export const startLargeSite = (options: LargeSiteOptions = {}): Promise<LargeSite> => {
  const pages = options.pages ?? 60
  const min = options.minBytes ?? 4_000_000
  const max = options.maxBytes ?? 8_000_000
  const blocks = Array.from({ length: 16 }, (_, i) => block(i + 1))
  const blocksOf = (i: number) => Math.ceil((min + ((i * 7919) % Math.max(1, max - min + 1))) / blockBytes)
  const requests: Array<string> = []
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!
    requests.push(path)
    if (path === "/p/" || path === "/p") {
      const links = Array.from({ length: pages }, (_, i) => `<li><a href="/p/${i}">page ${i}</a></li>`).join("\n")
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      res.end(`<html><head><title>Large pages</title></head><body><ul>${links}</ul></body></html>`)
      return
    }
    const m = /^\/p\/(\d+)$/.exec(path)
    const i = m ? Number(m[1]) : -1
    if (i < 0 || i >= pages) {
      res.writeHead(404, { "content-type": "text/plain" })
      res.end("not found")
      return
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.write(`<html><head><title>Page ${i}</title></head><body><h1>Page ${i}</h1>\n`)
    const total = blocksOf(i)
    let sent = 0
    const pump = () => {
      while (sent < total) {
        const chunk = blocks[(i + sent) % blocks.length]!
        sent++
        if (!res.write(chunk)) {
          res.once("drain", pump)
          return
        }
      }
      res.end("</body></html>\n")
    }
    res.on("error", () => undefined)
    pump()
  })
  // idle keep-alive connections stay open longer than a crawl's pauses, so that the crawler
  // never reuses one that the site is closing at that moment (a "socket hang up")
  server.keepAliveTimeout = 120_000
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      resolve({
        origin,
        start: `${origin}/p/`,
        pages,
        sizeOf: (i) => blocksOf(i) * blockBytes,
        requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
}
