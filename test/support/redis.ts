/**
 * A real Redis on loopback for the queue tests: Debian's `redis-server` (installed by `.ci/run`),
 * started on a free port with a temp working folder and no persistence, stopped by the test.
 */
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A running Redis. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string
  readonly port: number
  readonly stop: () => Promise<void>
}

/** Whether `redis-server` is on PATH. */
export const redisAvailable = (): boolean => spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** Options of {@link startRedis}. */
export interface RedisOptions {
  /** The port (default a free one): a Redis restarted on the same port looks the same to clients. */
  readonly port?: number | undefined
  /** Also listen on this Unix socket. */
  readonly unixSocket?: string | undefined
}

/** Starts `redis-server` on a free loopback port (or `options.port`); resolves once it accepts connections. */
export const startRedis = async (options: RedisOptions = {}): Promise<RedisServer> => {
  const port = options.port ?? await freePort()
  const dir = mkdtempSync(join(tmpdir(), "effect-rag-redis-"))
  const child = spawn("redis-server", [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--dir", dir,
    "--save", "",
    "--appendonly", "no",
    "--protected-mode", "no",
    ...(options.unixSocket !== undefined ? ["--unixsocket", options.unixSocket, "--unixsocketperm", "700"] : [])
  ], { stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr.on("data", (d: Buffer) => (output += d.toString()))
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start in 20 s:\n${output}`)), 20_000)
    const check = () => {
      if (/Ready to accept connections/.test(output)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout.on("data", check)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`redis-server exited with ${code}:\n${output}`))
    })
  })
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => {
          rmSync(dir, { recursive: true, force: true })
          resolve()
        })
        child.kill("SIGTERM")
      })
  }
}
