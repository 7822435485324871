/**
 * A real PostgreSQL with pgvector on loopback for the Postgres store's tests, started by the test:
 *
 * - by default PGlite (PostgreSQL compiled to WebAssembly) with its pgvector extension, served
 *   over the wire protocol by pglite-socket in this process, so the store talks to it through
 *   the same `pg` driver and SQL as to a server;
 * - with `EFFECT_RAG_TEST_POSTGRES=1`, Debian's PostgreSQL 15 (`initdb` + `pg_ctl` from
 *   `/usr/lib/postgresql/15/bin`, run as the `postgres` user when the test runs as root, since
 *   Debian's server refuses root) in a temp folder on a free port, with pgvector installed
 *   (`.ci/run` builds it).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A running server. */
export interface PostgresServer {
  /** `pglite` or `postgresql-15`. */
  readonly kind: string
  readonly host: string
  readonly port: number
  readonly user: string
  readonly database: string
  /** `postgres://user@127.0.0.1:port/database`. */
  readonly url: string
  readonly stop: () => Promise<void>
}

/** Whether the tests run against a real PostgreSQL server (`EFFECT_RAG_TEST_POSTGRES=1`). */
export const realServer = process.env["EFFECT_RAG_TEST_POSTGRES"] === "1"

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

const startPglite = async (): Promise<PostgresServer> => {
  const { PGlite } = await import("@electric-sql/pglite")
  const { vector } = await import("@electric-sql/pglite-pgvector")
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket")
  const db = await PGlite.create({ extensions: { vector } })
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 32 })
  await server.start()
  const address = (server as unknown as { server: { address: () => { port: number } } }).server.address()
  const port = address.port
  return {
    kind: "pglite",
    host: "127.0.0.1",
    port,
    user: "postgres",
    database: "postgres",
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop()
      await db.close()
    }
  }
}

const bin = "/usr/lib/postgresql/15/bin"

const startDebian = async (): Promise<PostgresServer> => {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "effect-rag-pg-"))
  chmodSync(dir, 0o777)
  const data = join(dir, "data")
  const asRoot = process.getuid?.() === 0
  const run = (cmd: string, args: ReadonlyArray<string>) =>
    asRoot ? execFileSync("runuser", ["-u", "postgres", "--", cmd, ...args], { stdio: "pipe" }) : execFileSync(cmd, args, { stdio: "pipe" })
  run(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
  run(join(bin, "pg_ctl"), [
    "-D", data, "-l", join(dir, "log"), "-w", "-t", "30",
    "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`,
    "start"
  ])
  return {
    kind: "postgresql-15",
    host: "127.0.0.1",
    port,
    user: "postgres",
    database: "postgres",
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: async () => {
      try {
        run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

/** Whether Debian's PostgreSQL 15 server is installed. */
export const debianPostgresInstalled = (): boolean => spawnSync(join(bin, "postgres"), ["--version"], { stdio: "ignore" }).status === 0

/** Starts the server the environment asks for (see the module doc). */
export const startPostgres = (): Promise<PostgresServer> => (realServer ? startDebian() : startPglite())
