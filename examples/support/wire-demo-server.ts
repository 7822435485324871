/**
 * A wire-format demo server for `examples/all-services.ts`: it answers every endpoint of the
 * service description with fixed, obviously synthetic data in the exact wire shapes, so the
 * example runs with no key and no network. It is NOT an AI service: the answers are canned.
 */
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"

const readBody = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks)))
  })

const json = (value: unknown) => ({ status: 200, body: JSON.stringify(value) })

/** Starts the demo server on a loopback port; resolves with its URL and a stop function. */
export const startDemoServer = async (): Promise<{ url: string; stop: () => Promise<void> }> => {
  let videoPolls = 0
  let musicPolls = 0
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req)
    const url = new URL(req.url ?? "/", "http://demo")
    const parsed = (() => {
      try {
        return JSON.parse(body.toString("utf8")) as Record<string, unknown>
      } catch {
        return {}
      }
    })()
    const path = url.pathname
    const reply = (() => {
      if (path === "/v1/models") {
        return json({ object: "list", data: [{ id: "demo-chat", object: "model", created: 0, owned_by: "demo" }] })
      }
      if (path === "/v1/chat/completions" && parsed["stream"] === true) {
        res.writeHead(200, { "content-type": "text/event-stream" })
        for (const piece of ["(demo) ", "streamed ", "reply"]) {
          res.write(`data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: piece } }] })}\n\n`)
        }
        res.end("data: [DONE]\n\n")
        return undefined
      }
      if (path === "/v1/chat/completions") {
        return json({
          object: "chat.completion",
          choices: [{ index: 0, message: { role: "assistant", content: "(demo) canned reply" }, finish_reason: "stop" }]
        })
      }
      if (path === "/v1/embeddings") {
        const input = parsed["input"]
        const texts = typeof input === "string" ? [input] : (input as Array<string>)
        return json({
          object: "list",
          data: texts.map((t, index) => ({ object: "embedding", index, embedding: [t.length, 1, 0] })),
          usage: { prompt_tokens: texts.length, total_tokens: texts.length }
        })
      }
      if (path === "/v1/rerank") {
        const docs = parsed["documents"] as Array<string>
        return json({ results: docs.map((d, index) => ({ index, relevance_score: 1 / (1 + d.length) })) })
      }
      if (path === "/v1/images/generations") {
        return json({ created: 0, data: [{ revised_prompt: String(parsed["prompt"]), url: "http://demo/image.png" }] })
      }
      if (path === "/v1/video_generation") return json({ task_id: "v1", base_resp: { status_code: 0, status_msg: "success" } })
      if (path === "/v1/query/video_generation") {
        return json(videoPolls++ < 1 ? { status: "Processing" } : { status: "Success", file_id: "f1" })
      }
      if (path === "/v1/files/retrieve") return json({ file: { download_url: "http://demo/video.mp4" } })
      if (path === "/svc/submit/music") return json({ status: "success", data: { task_id: "m1", estimated_completion_time: 0 } })
      if (path.startsWith("/svc/music/status/")) {
        return json(
          musicPolls++ < 1
            ? { status: "processing", data: { task_id: "m1" } }
            : { status: "completed", data: { task_id: "m1", audio_url: "http://demo/a.mp3", cover_image: "http://demo/c.png" } }
        )
      }
      if (path === "/upload" || path === "/v1/files") {
        return json({ status: true, content: "(demo) extracted text", type: "text", error: "" })
      }
      if (path === "/v1/crawl" && req.method === "POST") return json({ success: true, id: "c1", url: parsed["url"] })
      if (path === "/v1/crawl/c1") {
        return json({
          status: "completed",
          total: 1,
          completed: 1,
          creditsUsed: 1,
          expiresAt: "2030-01-01T00:00:00Z",
          next: null,
          data: [{ markdown: "# Demo page", metadata: { title: "Demo", sourceURL: "http://demo/", statusCode: 200 } }]
        })
      }
      if (path === "/v1/map") return json({ success: true, links: ["http://demo/", "http://demo/about"] })
      if (path === "/v1/scrape") {
        return json({ success: true, data: { markdown: "# Demo", metadata: { title: "Demo", sourceURL: parsed["url"], statusCode: 200 } } })
      }
      if (path === "/v1/web") {
        return json({
          id: "s1",
          object: "search.completion",
          created: 0,
          model: "svc-ai-search",
          choices: [{
            index: 0,
            message: { role: "assistant", content: "(demo) canned answer", sources: [{ pageContent: "demo", metadata: { title: "Demo", url: "http://demo/" } }] },
            finish_reason: "stop"
          }]
        })
      }
      return { status: 404, body: JSON.stringify({ error: { message: `demo server has no ${req.method} ${path}` } }) }
    })()
    if (reply !== undefined) {
      res.writeHead(reply.status, { "content-type": "application/json" })
      res.end(reply.body)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
