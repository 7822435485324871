/**
 * `effect-rag serve`: the real command in a child process, on a free loopback port. It serves
 * the local engines, refuses an embedder it cannot load, checks the key when one is set, and
 * stops cleanly on SIGTERM.
 */
import { describe, expect, it } from "@effect/vitest"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { serveFlags } from "../../src/server/internal/limits.js"
import { runCli, startServe } from "../support/cli.js"

describe("effect-rag serve", () => {
  it("serves the local document engine and the model list, within its limit flags; stops on SIGTERM", async () => {
    const server = await startServe(["--max-json-bytes", "1000"])
    try {
      const models = await fetch(`${server.url}/v1/models`)
      expect(await models.json()).toEqual({ object: "list", data: [] })
      const form = new FormData()
      form.append("file", new Blob([`{"title": "Served by effect-rag"}`], { type: "application/json" }), "note.json")
      const upload = await fetch(`${server.url}/upload`, { method: "POST", body: form })
      expect(upload.status).toBe(200)
      expect(await upload.json()).toMatchObject({ status: true, type: "text", content: expect.stringContaining("Served by effect-rag") })
      // nothing configured behind embeddings: a 501, not a call to some remote API
      const emb = await fetch(`${server.url}/v1/embeddings`, { method: "POST", body: JSON.stringify({ model: "m", input: "x" }) })
      expect(emb.status).toBe(501)
      // --max-json-bytes: a scrape body over 1,000 bytes is a 413
      const big = await fetch(`${server.url}/v1/scrape`, { method: "POST", body: JSON.stringify({ url: "http://example.com/", x: "y".repeat(2000) }) })
      expect(big.status).toBe(413)
      expect(await big.json()).toMatchObject({ success: false, code: "body_too_large", error: expect.stringContaining("1000 bytes") })
      // without --allow-private, a loopback target is refused naming the flag that opens it
      const loopback = await fetch(`${server.url}/v1/scrape`, { method: "POST", body: JSON.stringify({ url: "http://127.0.0.1:9/" }) })
      expect(loopback.status).toBe(400)
      expect(await loopback.json()).toMatchObject({ success: false, code: "blocked", error: expect.stringContaining("effect-rag serve --allow-private") })
    } finally {
      expect(await server.stop()).not.toBeNull()
    }
  }, 90_000)

  it("with EFFECT_RAG_SERVER_KEY, a request without the key is refused", async () => {
    const server = await startServe([], { EFFECT_RAG_SERVER_KEY: "serve-test-key" })
    try {
      expect((await fetch(`${server.url}/v1/models`)).status).toBe(401)
      const ok = await fetch(`${server.url}/v1/models`, { headers: { authorization: "Bearer serve-test-key" } })
      expect(ok.status).toBe(200)
      expect(server.output()).not.toContain("serve-test-key")
    } finally {
      await server.stop()
    }
  }, 90_000)

  it("--gateway proxies chat completions to the configured deployment with its key, never printed", async () => {
    const seen: Array<{ auth: string | undefined; body: string }> = []
    const upstream = createServer((req, res) => {
      let body = ""
      req.on("data", (d: Buffer) => (body += d.toString()))
      req.on("end", () => {
        seen.push({ auth: req.headers.authorization, body })
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({
          id: "c1",
          object: "chat.completion",
          created: 1,
          model: "m",
          choices: [{ index: 0, message: { role: "assistant", content: "proxied hello" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }
        }))
      })
    })
    await new Promise<void>((ok) => upstream.listen(0, "127.0.0.1", ok))
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
    const server = await startServe(["--gateway"], { EFFECT_RAG_BASE_URL: upstreamUrl, EFFECT_RAG_API_KEY: "upstream-secret-key" })
    try {
      const r = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] })
      })
      expect(r.status).toBe(200)
      expect(((await r.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe("proxied hello")
      expect(seen).toHaveLength(1)
      expect(seen[0]!.auth).toBe("Bearer upstream-secret-key")
      expect(JSON.parse(seen[0]!.body)).toMatchObject({ model: "m", messages: [{ role: "user", content: "hi" }] })
      expect(server.output()).toContain(upstreamUrl)
      expect(server.output()).not.toContain("upstream-secret-key")
    } finally {
      await server.stop()
      upstream.close()
    }
  }, 90_000)

  it("--help lists the flag that each server limit's refusal names", async () => {
    const r = await runCli(["serve", "--help"])
    expect(r.code).toBe(0)
    for (const flag of Object.values(serveFlags)) expect(r.stdout).toContain(flag)
  }, 90_000)

  it("a limit flag that is not positive stops the start, naming the flag", async () => {
    const r = await runCli(["serve", "--port", "0", "--max-json-bytes", "0"])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("--max-json-bytes must be a positive number, not 0")
  }, 90_000)

  it("--playground without --db stops the start: the page shows that database's collections", async () => {
    const r = await runCli(["serve", "--port", "0", "--playground"])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("--playground needs --db DIR|URI")
  }, 90_000)

  it("an embedder that cannot load stops the start with its reason (exit 1)", async () => {
    const r = await runCli(["serve", "--port", "0", "--embedder", "onnx:/nonexistent/model"])
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("ConfigurationError")
    expect(r.stderr).toContain("/nonexistent/model")
  }, 90_000)
})
