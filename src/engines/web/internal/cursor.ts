/**
 * The local engine's `next` cursors: `local://crawl/{id}?skip={n}`, accepted by `crawlStatus`
 * in place of a job id.
 */

/** The `next` cursor of a job record. */
export const nextCursor = (id: string, skip: number): string => `local://crawl/${encodeURIComponent(id)}?skip=${skip}`

/** Reads an id or a `next` cursor: the job id and the pages to skip. */
export const parseCursor = (idOrNext: string): { id: string; skip: number } => {
  const m = /^local:\/\/crawl\/([^?]+)(?:\?skip=(\d+))?$/.exec(idOrNext)
  if (!m) return { id: idOrNext, skip: 0 }
  return { id: decodeURIComponent(m[1]!), skip: Number(m[2] ?? "0") }
}
