/**
 * The local web engine's options with their defaults applied (`LocalWeb.Options` resolved once
 * when the engine is made), read by every part of the engine.
 */
import type { Duration } from "effect"
import type { Policy } from "./ssrf.js"

/** The resolved options of one engine. */
export interface Settings {
  readonly policy: Policy
  readonly userAgent: string
  readonly mobileUserAgent: string
  readonly politenessMs: number
  readonly maxCrawlDelayMs: number
  readonly concurrency: number
  readonly pageTimeout: Duration.Duration
  readonly maxBodyBytes: number
  readonly maxRedirects: number
  readonly respectRobots: boolean
  readonly pageSize: number
  readonly pageBytes: number
  readonly spillDir: string | undefined
  readonly defaultMaxDepth: number
  readonly defaultLimit: number
  readonly mapMaxPages: number
  readonly maxSitemaps: number
  readonly retentionMs: number
}
