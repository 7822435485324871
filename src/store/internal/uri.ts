/**
 * Whether `uri` names an object store (`scheme://…` other than `file://`) rather than a local
 * folder. Windows drive paths (`C:\…`) are folders. Its own module, free of LanceDB, so the CLI
 * can tell a folder from a URI without loading the store.
 */
export const isObjectStoreUri = (uri: string): boolean => /^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !/^file:\/\//i.test(uri)
