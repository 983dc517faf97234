import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ViewerResult } from '../shared/operations';

export type Viewer = ViewerResult['viewer'];

export const ViewerContext = createContext<Viewer | null>(null);

/** Who is signed in (inside the signed-in app only). */
export function useViewer(): Viewer {
  const viewer = useContext(ViewerContext);
  if (!viewer) throw new Error('useViewer outside a signed-in app');
  return viewer;
}

/** Billing keys only read: every mutation is refused, so none is offered. */
export function canChange(viewer: Viewer): boolean {
  return viewer.role !== 'TENANT_BILLING';
}

/** Tenant admins alone set budgets and webhook endpoints. */
export function isTenantAdmin(viewer: Viewer): boolean {
  return viewer.role === 'TENANT_ADMIN';
}

const ROLE_LABELS: Record<string, string> = {
  OPERATOR: 'Operator',
  TENANT_ADMIN: 'Admin',
  TENANT_MEMBER: 'Member',
  TENANT_BILLING: 'Billing (read-only)',
  USAGE_REPORTER: 'Usage reporter',
  PROVIDER: 'Provider',
};

export function roleLabel(role: string): string {
  return ROLE_LABELS[role] ?? role;
}
