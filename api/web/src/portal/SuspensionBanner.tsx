import type { Viewer } from '../ui/viewer';

/** Shown on every page while the tenant is suspended, with the operator's reason. */
export function SuspensionBanner({ viewer }: { viewer: Viewer }) {
  const tenant = viewer.tenant;
  if (tenant?.status !== 'SUSPENDED') return null;
  return (
    <div class="banner banner-danger" role="region" aria-label="Account suspended">
      <p>
        <strong>Your account is suspended.</strong> {tenant.suspensionReason ?? 'No reason was given.'} Running allocations continue; new orders are refused until
        your operator resumes the account.
      </p>
    </div>
  );
}
