import { useEffect, useState } from 'preact/hooks';
import { type ApiError, asApiError, request } from '../lib/api';
import { Tenant, type TenantRowFragment } from './operations';

/** One tenant by id (`tenant(id)`); `set` replaces it after an action changed it. */
export function useTenant(id: string) {
  const [tenant, setTenant] = useState<TenantRowFragment | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    request(Tenant, { id })
      .then((r) => live && (setTenant(r.tenant), setError(null)))
      .catch((e: unknown) => live && setError(asApiError(e)))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [id, tick]);
  return { tenant, error, loading, reload: () => setTick((n) => n + 1), set: setTenant };
}
