/**
 * Pure helpers of the Security page (the signed-in person's second factor), in the portal
 * and the provider console, and of their people pages.
 */

/** A base32 secret as it is easiest to type: groups of four ("JBSW Y3DP EHPK 3PXP"). */
export function groupInFours(secret: string): string {
  const bare = secret.replace(/[\s=]+/g, '').toUpperCase();
  return (bare.match(/.{1,4}/g) ?? []).join(' ');
}

/** The person signed in among its tenant's or provider's users (emails compare lower-cased). */
export function findSelf<U extends { email: string; state: string }>(users: readonly U[], email: string | null | undefined): U | null {
  if (!email) return null;
  const wanted = email.trim().toLowerCase();
  return users.find((u) => u.state !== 'REMOVED' && u.email.toLowerCase() === wanted) ?? null;
}

/** The recovery codes as a text file to keep (what "Download" saves). */
export function recoveryCodesText(email: string, codes: readonly string[], at: Date): string {
  return [
    email ? `neocloud recovery codes for ${email}` : 'neocloud recovery codes',
    `Created ${at.toISOString().slice(0, 16).replace('T', ' ')} UTC. Each code works once, in place of a code from your authenticator app.`,
    '',
    ...codes,
    '',
  ].join('\n');
}

/** A file name for the recovery codes: "neocloud-recovery-codes-ada-example.com.txt". */
export function recoveryCodesFileName(email: string): string {
  const safe = email.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^-+|-+$/g, '');
  return `neocloud-recovery-codes${safe ? `-${safe}` : ''}.txt`;
}

/** Whether `code` looks like a current authenticator code (six digits, spaces aside). */
export function isAppCode(code: string): boolean {
  return /^\d{6}$/.test(code.replace(/\s+/g, ''));
}

/**
 * The account an `otpauth://totp/<issuer>:<account>?…` URI names (the setup screen's
 * person, whose email nothing else there tells): "" when it names none.
 */
export function accountOfOtpauth(uri: string): string {
  const m = /^otpauth:\/\/totp\/([^?#]*)/i.exec(uri);
  if (!m) return '';
  let label: string;
  try {
    label = decodeURIComponent(m[1] ?? '');
  } catch {
    return '';
  }
  const colon = label.indexOf(':');
  return (colon >= 0 ? label.slice(colon + 1) : label).trim();
}

/**
 * The people who still must set up a second factor once the tenant requires one:
 * those invited or active without one (removed ones never sign in again).
 */
export function withoutSecondFactor<U extends { state: string; secondFactorSince: string | null }>(users: readonly U[]): U[] {
  return users.filter((u) => u.state !== 'REMOVED' && !u.secondFactorSince);
}

/**
 * Whether the requirement is off and `me` (the person signed in, found among the users;
 * null for a key) has no second factor: they may turn it on only once theirs is on.
 */
export function ownSecondFactorFirst(required: boolean, me: { secondFactorSince: string | null } | null): boolean {
  return !required && !!me && !me.secondFactorSince;
}

/**
 * What the requirement's switch says of the `missing` people without a second factor:
 * while required, where the list marks them (`marked`: 'marked "No 2FA yet" above') and
 * that they must set one up before using `app` ("the portal").
 */
export function missingSecondFactorText(missing: number, required: boolean, marked: string, app: string): string {
  if (missing === 0) return 'Everyone here has a second factor.';
  const people = missing === 1 ? '1 person has' : `${missing} people have`;
  return required ? `${people} no second factor yet (${marked}): they must set one up before they can use ${app}.` : `${people} no second factor yet.`;
}
