import { useEffect, useState } from 'preact/hooks';
import { ApiError, asApiError, request } from '../lib/api';
import { type TenantRowFragment, Tenants, type TenantsResult } from './operations';

/** At most this many pages of 100 tenants are searched. */
const MAX_PAGES = 50;

/**
 * One tenant by id. The API has no `tenant(id)` query, so this reads `tenants` a page
 * of 100 at a time until the id turns up.
 */
export function useTenant(id: string) {
  const [tenant, setTenant] = useState<TenantRowFragment | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    findTenant(id)
      .then((t) => live && (t ? (setTenant(t), setError(null)) : setError(new ApiError('NOT_FOUND', 'There is no tenant with this id.'))))
      .catch((e: unknown) => live && setError(asApiError(e)))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [id, tick]);
  return { tenant, error, loading, reload: () => setTick((n) => n + 1), set: setTenant };
}

async function findTenant(id: string): Promise<TenantRowFragment | null> {
  let after: string | null = null;
  for (let page = 0; page < MAX_PAGES; page += 1) {
    const { tenants }: TenantsResult = await request(Tenants, { first: 100, after });
    const found = tenants.nodes.find((t) => t.id === id);
    if (found) return found;
    if (!tenants.pageInfo.hasNextPage) return null;
    after = tenants.pageInfo.endCursor;
  }
  return null;
}
