/** Where a provider's statement is read, with its lines. */
export function statementPath(providerId: string, statementId: string): string {
  return `/providers/${encodeURIComponent(providerId)}/statements/${encodeURIComponent(statementId)}`;
}
