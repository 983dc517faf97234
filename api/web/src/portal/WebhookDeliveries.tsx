import { useEffect, useState } from 'preact/hooks';
import { dateTime } from '../lib/format';
import { useMutation, useQuery } from '../lib/hooks';
import { shortId } from '../lib/ids';
import { StatusBadge } from '../ui/Badge';
import { Button } from '../ui/Button';
import { type Column, DataTable } from '../ui/DataTable';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Loading, Notice } from '../ui/Notice';
import { lastAttemptOf, redeliveredNote, sinceInstant, toLocalInput } from './deliveries';
import { RedeliverWebhook, RedeliverWebhooksSince, WebhookDeliveries, type WebhookDeliveriesResult, type WebhookEndpointRowFragment } from './operations';

type Endpoint = WebhookEndpointRowFragment;
type Log = WebhookDeliveriesResult['webhookEndpoints'][number];
type Delivery = Log['deliveries'][number];
type Attempt = Log['attempts'][number];

/** While a delivery is pending, the open log is asked again this often. */
const POLL_MS = 10_000;

/** "Deliveries": an endpoint's latest 20 deliveries, read when opened; admins redeliver. */
export function DeliveryLog({ endpoint, admin }: { endpoint: Endpoint; admin: boolean }) {
  const [open, setOpen] = useState(false);
  return (
    <details class="card version deliveries" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary>
        Deliveries <span class="muted">to</span> <code class="wrap">{endpoint.url}</code>
      </summary>
      {open && <DeliveryLogBody endpoint={endpoint} admin={admin} />}
    </details>
  );
}

function DeliveryLogBody({ endpoint, admin }: { endpoint: Endpoint; admin: boolean }) {
  const [pendingSeen, setPendingSeen] = useState(false);
  const { data, error, loading, reload } = useQuery(WebhookDeliveries, {}, { pollMs: pendingSeen ? POLL_MS : undefined });
  const [note, setNote] = useState<string | null>(null);
  const log = data?.webhookEndpoints.find((e) => e.id === endpoint.id) ?? null;
  const pending = !!log?.deliveries.some((d) => d.status === 'PENDING');
  useEffect(() => setPendingSeen(pending), [pending]);
  const done = (message: string) => {
    setNote(message);
    reload();
  };
  return (
    <div class="deliveries-body">
      <div class="section-head">
        <p class="muted small">The latest 20 deliveries, newest first{pending ? '; refreshed while some are pending' : ''}.</p>
        <Button small pending={loading && !!data} onClick={reload} aria-label={`Refresh deliveries to ${endpoint.url}`}>
          Refresh
        </Button>
      </div>
      {note && <Notice tone="success">{note}</Notice>}
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading deliveries…" />}
      {data && !log && <p class="empty">This endpoint is gone.</p>}
      {log && (
        <DataTable
          caption={`Deliveries to ${endpoint.url}`}
          hideCaption
          columns={columns(endpoint, log.attempts, admin, done)}
          rows={log.deliveries}
          rowKey={(d) => d.eventId}
          loading={loading}
          empty="Nothing delivered yet: events go out as they happen (Send test sends one now)."
        />
      )}
      {admin && log && <RedeliverSince endpoint={endpoint} onDone={done} />}
    </div>
  );
}

function columns(endpoint: Endpoint, attempts: Attempt[], admin: boolean, done: (note: string) => void): Column<Delivery>[] {
  const cols: Column<Delivery>[] = [
    {
      header: 'Event',
      cell: (d) => (
        <div class="cell-stack">
          <strong>{d.eventType || 'event no longer kept'}</strong>
          <code class="muted" title={d.eventId}>{shortId(d.eventId)}</code>
          <span class="muted">{dateTime(d.createdAt)}</span>
        </div>
      ),
    },
    { header: 'Status', cell: (d) => <StatusBadge value={d.status} /> },
    { header: 'Attempts', numeric: true, cell: (d) => d.attempts },
    { header: 'Last attempt', cell: (d) => <LastAttempt delivery={d} attempt={lastAttemptOf(attempts, d.eventId)} /> },
    { header: 'Delivered', cell: (d) => dateTime(d.deliveredAt) },
    { header: 'Answer', cell: (d) => <Answer delivery={d} attempt={lastAttemptOf(attempts, d.eventId)} /> },
  ];
  if (admin) {
    cols.push({ header: 'Actions', hiddenHeader: true, cell: (d) => d.status === 'FAILED' && <Redeliver endpoint={endpoint} eventId={d.eventId} onDone={done} /> });
  }
  return cols;
}

function LastAttempt({ delivery: d, attempt }: { delivery: Delivery; attempt: Attempt | null }) {
  return (
    <div class="cell-stack">
      <span>{attempt ? dateTime(attempt.at) : d.attempts === 0 ? 'Not yet' : '—'}</span>
      {d.status === 'PENDING' && d.nextAttemptAt && <span class="muted">{`next ${dateTime(d.nextAttemptAt)}`}</span>}
    </div>
  );
}

/** The last answer: HTTP status and latency, or the error, and the answer's first bytes. */
function Answer({ delivery: d, attempt }: { delivery: Delivery; attempt: Attempt | null }) {
  const status = attempt?.statusCode ?? d.lastStatusCode;
  const error = attempt?.error ?? d.lastError;
  if (status == null && !error) return <span class="muted">—</span>;
  return (
    <div class="cell-stack">
      {status != null && <span>{`HTTP ${status}${attempt ? ` in ${attempt.latencyMs} ms` : ''}`}</span>}
      {error && <span class="muted wrap-anywhere">{error}</span>}
      {attempt?.responseHead && (
        <details class="change">
          <summary>Its first bytes</summary>
          <pre>{attempt.responseHead}</pre>
        </details>
      )}
    </div>
  );
}

function Redeliver({ endpoint, eventId, onDone }: { endpoint: Endpoint; eventId: string; onDone: (note: string) => void }) {
  const redeliver = useMutation(RedeliverWebhook);
  const run = async () => {
    if (await redeliver.run({ endpointId: endpoint.id, eventId })) onDone(`Event ${shortId(eventId)} queued again for ${endpoint.url}.`);
  };
  return (
    <div class="inline-actions">
      <Button small pending={redeliver.pending} onClick={run} aria-label={`Redeliver event ${shortId(eventId)}`}>
        Redeliver
      </Button>
      <ErrorNotice error={redeliver.error} />
    </div>
  );
}

/** "Redeliver since…": every event since a moment sent again (the receiver was down). */
function RedeliverSince({ endpoint, onDone }: { endpoint: Endpoint; onDone: (note: string) => void }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <div class="redeliver-since">
        <Button small onClick={() => setAsking(true)} aria-label={`Redeliver since… to ${endpoint.url}`}>
          Redeliver since…
        </Button>
      </div>
    );
  }
  return <RedeliverSinceForm endpoint={endpoint} onDone={(note) => (setAsking(false), onDone(note))} onCancel={() => setAsking(false)} />;
}

function RedeliverSinceForm({ endpoint, onDone, onCancel }: { endpoint: Endpoint; onDone: (note: string) => void; onCancel: () => void }) {
  const [value, setValue] = useState(() => toLocalInput(new Date(Date.now() - 24 * 3600_000)));
  const [problem, setProblem] = useState<string | null>(null);
  const redeliver = useMutation(RedeliverWebhooksSince);
  useEffect(() => document.getElementById(`since-${endpoint.id}`)?.focus(), [endpoint.id]);
  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = sinceInstant(value, new Date());
    setProblem('problem' in checked ? checked.problem : null);
    if ('problem' in checked) return;
    const r = await redeliver.run({ endpointId: endpoint.id, since: checked.since });
    if (r) onDone(redeliveredNote(r.redeliverWebhooksSince, endpoint.url));
  };
  return (
    <form class="inline-form redeliver-since" onSubmit={submit} noValidate aria-label={`Redeliver events to ${endpoint.url}`}>
      <Field label="Send again every event since" id={`since-${endpoint.id}`} name="since" error={redeliver.error} message={problem} hint="Your local time. Events are kept 30 days; at most 10,000 are sent again.">
        {(p) => <input {...p} type="datetime-local" value={value} onInput={(e) => setValue(e.currentTarget.value)} />}
      </Field>
      <ErrorNotice error={unclaimed(redeliver.error, ['since'])} />
      <div class="form-actions-inline">
        <Button type="submit" variant="primary" pending={redeliver.pending}>
          Redeliver
        </Button>
        <Button variant="ghost" disabled={redeliver.pending} onClick={onCancel}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
