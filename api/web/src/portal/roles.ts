import type { Role } from '../gql/schema';

/** What each tenant role may hand out or take away (the API's `Role::may_manage`). */
const MANAGES: Partial<Record<Role, readonly Role[]>> = {
  TENANT_ADMIN: ['TENANT_ADMIN', 'TENANT_MEMBER', 'TENANT_BILLING', 'USAGE_REPORTER'],
  TENANT_MEMBER: ['TENANT_MEMBER'],
};

/** Whether a `viewer` key may create, invite, revoke or remove one of `role`. */
export function mayManage(viewer: Role, role: Role): boolean {
  return MANAGES[viewer]?.includes(role) ?? false;
}

/** The roles `viewer` may give a new API key. */
export function keyRoles(viewer: Role): readonly Role[] {
  return MANAGES[viewer] ?? [];
}

/** The roles `viewer` may invite a person with (people are never usage reporters). */
export function userRoles(viewer: Role): readonly Role[] {
  return keyRoles(viewer).filter((r) => r !== 'USAGE_REPORTER');
}

const ABOUT: Partial<Record<Role, string>> = {
  TENANT_ADMIN: 'Admin: everything, keys, people, budget and webhooks included',
  TENANT_MEMBER: 'Member: orders and releases GPUs, reads usage and invoices',
  TENANT_BILLING: 'Billing: reads orders, usage and invoices; changes nothing',
  USAGE_REPORTER: 'Usage reporter: only sends usage events (POST /v1/events)',
};

export function roleAbout(role: Role): string {
  return ABOUT[role] ?? role;
}

/** Keys minted for portal users carry this label (the people page manages them). */
export const PORTAL_USER_KEY = 'portal user ';
