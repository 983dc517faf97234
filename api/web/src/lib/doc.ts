/**
 * A GraphQL operation with its result and variables types. The generated
 * `operations.ts` modules export one per operation (scripts/codegen.mjs).
 */
export interface Doc<R, V> {
  readonly query: string;
  readonly name: string;
  /** Phantom fields: never set, they only carry the types. */
  readonly __result?: R;
  readonly __variables?: V;
}
