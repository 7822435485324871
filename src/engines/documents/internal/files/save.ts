/** `save_all`: the raw file and the result kept in a folder of their own. */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { mkdir, writeFile } from "node:fs/promises"
import { basename, join } from "node:path"
import type * as Upload from "../../../../api/Upload.js"

/**
 * Keeps the raw file and the result in `saveDir/<time>-<id>/` when the call asked for it
 * (`saveAll`); a missing `saveDir` or a failed write becomes a warning, never a failure.
 */
export const save = (
  saveDir: string | undefined,
  saveAll: boolean,
  file: Upload.UploadFile,
  result: unknown,
  warnings: Array<string>
): Effect.Effect<void> =>
  !saveAll ? Effect.void : Effect.gen(function*() {
    if (!saveDir) {
      warnings.push("save_all: no save directory is configured for the local engine (LocalFiles saveDir); nothing was saved")
      return
    }
    const dir = join(saveDir, `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomUUID().slice(0, 8)}`)
    const name = basename(file.name).replace(/[^\p{L}\p{N}._ -]/gu, "_") || "file"
    yield* Effect.tryPromise(async () => {
      await mkdir(dir, { recursive: true })
      await writeFile(join(dir, name), file.data)
      await writeFile(join(dir, "result.json"), JSON.stringify(result, null, 2))
    }).pipe(
      Effect.catchAll((e) =>
        Effect.sync(() => warnings.push(`save_all: could not save to ${saveDir}: ${(e.error as Error)?.message ?? e}`))
      )
    )
  })
