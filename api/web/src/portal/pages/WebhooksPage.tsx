import { useState } from 'preact/hooks';
import { dateTime } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { Badge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { SecretOnce } from '../../ui/SecretOnce';
import { isTenantAdmin, useViewer } from '../../ui/viewer';
import { AccountNav } from '../AccountNav';
import { type WebhookEndpointRowFragment, WebhookEndpoints } from '../operations';
import { type EndpointHandlers, WebhookActions } from '../WebhookActions';
import { DeliveryLog } from '../WebhookDeliveries';
import { WebhookForm } from '../WebhookForm';

type Endpoint = WebhookEndpointRowFragment;

/** Where events are sent: the endpoints, their state; admins add, test, rotate and delete. */
export function WebhooksPage() {
  const viewer = useViewer();
  const { data, error, loading, reload } = useQuery(WebhookEndpoints, {});
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const admin = isTenantAdmin(viewer);
  const types = (data?.eventTypes ?? []).filter((t) => t.audience !== 'operator');
  const withSecret = (url: string, value: string) => {
    setSecret({ url, secret: value });
    setNote(null);
    reload();
  };
  return (
    <Page title="Webhooks" lead="neocloud posts events (allocations, invoices, budget alerts…) to these URLs, signed by the Standard Webhooks scheme.">
      <AccountNav />
      {!admin && <Notice tone="info">Only admins of your organisation can change webhook endpoints.</Notice>}
      {secret && (
        <div class="card form-card">
          <SecretOnce label={`Signing secret for ${secret.url}`} value={secret.secret} note="Your receiver verifies each event's signature with it." onDone={() => setSecret(null)} />
        </div>
      )}
      {note && <Notice tone="success">{note}</Notice>}
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading webhook endpoints…" />}
      {data && (
        <Section title="Endpoints">
          <DataTable caption="Webhook endpoints" hideCaption columns={columns(admin, { reload, withSecret, setNote })} rows={data.webhookEndpoints} rowKey={(e) => e.id} loading={loading} empty="No endpoints: events are not sent anywhere." />
        </Section>
      )}
      {data && data.webhookEndpoints.length > 0 && (
        <Section title="Delivery log">
          <p class="section-lead muted">Open an endpoint's deliveries to see each event's attempts and its receiver's answers{admin ? ', and send failed ones again' : ''}.</p>
          {data.webhookEndpoints.map((e) => (
            <DeliveryLog key={e.id} endpoint={e} admin={admin} />
          ))}
        </Section>
      )}
      {data && admin && !secret && (
        <Section title="Add an endpoint">
          <WebhookForm types={types} onCreated={withSecret} />
        </Section>
      )}
    </Page>
  );
}

function columns(admin: boolean, handlers: EndpointHandlers): Column<Endpoint>[] {
  const cols: Column<Endpoint>[] = [
    {
      header: 'URL',
      cell: (e) => (
        <div class="cell-stack">
          <code class="wrap">{e.url}</code>
          {e.description && <span class="muted">{e.description}</span>}
        </div>
      ),
    },
    { header: 'Events', cell: (e) => <EventList types={e.eventTypes} /> },
    { header: 'State', cell: (e) => <EndpointState endpoint={e} /> },
    { header: 'Created', cell: (e) => dateTime(e.createdAt) },
  ];
  if (admin) cols.push({ header: 'Actions', hiddenHeader: true, cell: (e) => <WebhookActions endpoint={e} handlers={handlers} /> });
  return cols;
}

function EventList({ types }: { types: string[] }) {
  if (types.length === 0) return <span>All events</span>;
  return (
    <details class="change">
      <summary>{types.length === 1 ? '1 event type' : `${types.length} event types`}</summary>
      <ul class="plain-list">
        {types.map((t) => (
          <li key={t}>
            <code>{t}</code>
          </li>
        ))}
      </ul>
    </details>
  );
}

function EndpointState({ endpoint: e }: { endpoint: Endpoint }) {
  return (
    <div class="cell-stack">
      {e.enabled ? <Badge tone="good">Enabled</Badge> : <Badge tone="bad">Disabled</Badge>}
      {e.disabledReason && <span class="muted">{e.disabledReason}</span>}
      {e.failingSince && <Badge tone="warn">{`Failing since ${dateTime(e.failingSince)}`}</Badge>}
      {e.previousSecretValidUntil && Date.parse(e.previousSecretValidUntil) > Date.now() && (
        <span class="muted">{`Old secret signs too until ${dateTime(e.previousSecretValidUntil)}`}</span>
      )}
    </div>
  );
}
