/**
 * Where a store lives, told from its URI without loading any store: whether a `--db` value is an
 * object-store URI, and the default database folder. Its own module, free of LanceDB, so the
 * command line and the wiring can read a URI before they load the store behind it.
 *
 * @since 0.1.0
 */

/**
 * Whether `uri` names an object store (`scheme://…` other than `file://`) rather than a local
 * folder. Windows drive paths (`C:\…`) are folders.
 *
 * @since 0.1.0
 * @category uri
 */
export const isObjectStoreUri = (uri: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !/^file:\/\//i.test(uri)

/**
 * The database of the command line and of the `*Config` layers when none is given
 * (`EFFECT_RAG_DB` unset): a LanceDB folder in the working directory.
 *
 * @since 0.1.0
 * @category uri
 */
export const defaultDb = ".effect-rag/db"

/**
 * A store URI as it may be printed: a password in the URI (`postgres://user:secret@host/db`) is
 * replaced by `***`. Every message and JSON output of the command line that names the store
 * prints it through this.
 *
 * @since 0.1.0
 * @category uri
 */
export const displayUri = (uri: string): string => {
  if (!isObjectStoreUri(uri)) return uri
  try {
    const u = new URL(uri)
    if (u.password === "") return uri
    u.password = "***"
    return u.href
  } catch {
    return uri.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@")
  }
}
