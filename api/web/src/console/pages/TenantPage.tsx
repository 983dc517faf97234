import { dateTime } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { StatusBadge } from '../../ui/Badge';
import { DescriptionList } from '../../ui/DescriptionList';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { CreditSection } from '../CreditSection';
import { Tenant, type TenantRowFragment } from '../operations';
import { PlanSection } from '../PlanSection';
import { QuotaSection } from '../QuotaSection';
import { TenantActions } from '../TenantActions';
import { TenantInvoices } from '../TenantInvoices';

/** One tenant: status and suspension, quotas, plan, credits and invoices. */
export function TenantPage({ params }: { params: Record<string, string> }) {
  const { data, error, loading, reload } = useQuery(Tenant, { id: params['id'] ?? '' });
  const tenant = data?.tenant;
  return (
    <Page title={tenant ? `Tenant ${tenant.name}` : 'Tenant'} lead={<Link to="/tenants">← Every tenant</Link>} actions={tenant && <TenantActions tenant={tenant} onChanged={reload} />}>
      <ErrorNotice error={error} onRetry={reload} />
      {!tenant && loading && <Loading label="Loading the tenant…" />}
      {tenant && (
        <>
          <Overview tenant={tenant} />
          <QuotaSection tenantId={tenant.id} />
          <PlanSection tenantId={tenant.id} currency={tenant.currency} />
          <CreditSection tenantId={tenant.id} currency={tenant.currency} />
          <TenantInvoices tenantId={tenant.id} />
        </>
      )}
    </Page>
  );
}

function Overview({ tenant: t }: { tenant: TenantRowFragment }) {
  return (
    <Section title="Overview">
      <DescriptionList
        items={[
          ['Status', <StatusBadge value={t.status} />],
          ['Suspension reason', t.suspensionReason ?? '—'],
          ['Id', <code>{t.id}</code>],
          ['Currency', t.currency],
          ['Home region', t.homeRegion ?? 'Not set'],
          ['Allowed regions', t.allowedRegions ? t.allowedRegions.join(', ') || 'None' : 'Any'],
          ['Billing periods start on day', t.billingAnchorDay],
          ['Net terms', t.netTermsDays === 0 ? 'Due on receipt' : `${t.netTermsDays} days`],
          ['Created', dateTime(t.createdAt)],
          ...(t.erasedAt ? [['Personal data erased', dateTime(t.erasedAt)] as [string, string]] : []),
        ]}
      />
    </Section>
  );
}
