/** Where one of the provider's nodes is read. */
export function nodePath(id: string): string {
  return `/nodes/${encodeURIComponent(id)}`;
}

/** Where one of the provider's statements is read, with its lines. */
export function statementPath(id: string): string {
  return `/statements/${encodeURIComponent(id)}`;
}
