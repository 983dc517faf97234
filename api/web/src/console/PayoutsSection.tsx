import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { money } from '../lib/format';
import { type QueryState, useMutation } from '../lib/hooks';
import { payoutColumns } from '../provider-shared/payoutColumns';
import { recordable, sepaFileName, sepaQueued } from '../provider-shared/payouts';
import { Button } from '../ui/Button';
import { ConfirmButton } from '../ui/ConfirmButton';
import { type Column, DataTable } from '../ui/DataTable';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Loading, Notice } from '../ui/Notice';
import { Section } from '../ui/Page';
import {
  CreateSepaPayoutFile,
  type CreateSepaPayoutFileResult,
  type ProviderPayoutRowFragment,
  type ProviderPayoutsResult,
  RecordManualPayout,
} from './operations';
import { statementPath } from './statements';

type Payout = ProviderPayoutRowFragment;
type SepaFile = CreateSepaPayoutFileResult['createSepaPayoutFile'];

const MAX_REFERENCE = 140;

interface PayoutsSectionProps {
  provider: { id: string; name: string };
  payouts: QueryState<ProviderPayoutsResult>;
  /** Statement numbers by id, to name the statement each payout pays. */
  statementNumbers: ReadonlyMap<string, string>;
}

/** The provider's payouts, newest first: record a manual one as paid, pay the SEPA ones with a file. */
export function PayoutsSection({ provider, payouts, statementNumbers }: PayoutsSectionProps) {
  // Payouts recorded here, shown as the server answered until the list is read again.
  const [recorded, setRecorded] = useState<ReadonlyMap<string, Payout>>(new Map());
  const [note, setNote] = useState<string | null>(null);
  const [file, setFile] = useState<SepaFile | null>(null);
  const sepa = useMutation(CreateSepaPayoutFile);
  useEffect(() => setRecorded(new Map()), [payouts.data]);
  const rows = (payouts.data?.providerPayouts ?? []).map((p) => recorded.get(p.id) ?? p);
  const onRecorded = (p: Payout) => {
    setRecorded((old) => new Map(old).set(p.id, p));
    setNote(`Payout ${p.number} recorded as sent${p.reference ? `, reference ${p.reference}` : ''}.`);
  };
  const createFile = async () => {
    setFile(null);
    setNote(null);
    const r = await sepa.run({});
    if (r) {
      setFile(r.createSepaPayoutFile);
      payouts.reload();
    }
    // The question closes either way: an error shows below the heading.
    return true;
  };
  const canPaySepa = sepaQueued(rows);
  const actions = canPaySepa && (
    <ConfirmButton label="Create SEPA file" confirmLabel="Confirm: create SEPA file" what="for every queued euro SEPA payout" pending={sepa.pending} error={null} onConfirm={createFile} />
  );
  return (
    <Section title="Payouts" actions={actions}>
      {canPaySepa && (
        <p class="section-lead muted">
          Create SEPA file pays every queued euro SEPA payout, of every provider, with one credit-transfer file from the operator's account; the payouts count as sent once it is made. Upload the file
          to the bank.
        </p>
      )}
      <ErrorNotice error={sepa.error} />
      {file && <SepaFileReady file={file} />}
      {note && <Notice tone="success">{note}</Notice>}
      <ErrorNotice error={payouts.error} onRetry={payouts.reload} />
      {!payouts.data && payouts.loading && <Loading label="Loading payouts…" />}
      {payouts.data && (
        <DataTable
          virtual
          caption={`Payouts to ${provider.name}, newest first`}
          hideCaption
          columns={columns(provider.id, statementNumbers, onRecorded)}
          rows={rows}
          rowKey={(p) => p.id}
          loading={payouts.loading}
          empty="No payouts yet: a closed statement queues one once the provider is owed at least the agreement's minimum."
        />
      )}
    </Section>
  );
}

/** The file just made, as a download (it is also fetched again later by its message id). */
function SepaFileReady({ file }: { file: SepaFile }) {
  const link = useRef<HTMLAnchorElement>(null);
  const url = useMemo(() => URL.createObjectURL(new Blob([file.xml], { type: 'application/xml;charset=utf-8' })), [file.xml]);
  useEffect(() => () => URL.revokeObjectURL(url), [url]);
  // The button that made it may be gone (nothing queued is left): the focus goes to the download.
  useEffect(() => link.current?.focus(), [url]);
  const name = sepaFileName(file.messageId);
  const count = file.payouts.length;
  return (
    <Notice tone="success" title={`SEPA file ${file.messageId}`}>
      <p>
        It pays {count} payout{count === 1 ? '' : 's'}: {file.payouts.map((p) => `${p.number} (${money(p.amount, p.currency)})`).join(', ')}.
      </p>
      <p>
        <a class="btn btn-primary" href={url} download={name} ref={link}>
          Download {name}
        </a>
      </p>
    </Notice>
  );
}

function columns(providerId: string, numbers: ReadonlyMap<string, string>, onRecorded: (p: Payout) => void): Column<Payout>[] {
  return [
    ...payoutColumns<Payout>((statementId) => statementPath(providerId, statementId), numbers),
    { header: 'Actions', hiddenHeader: true, cell: (p) => recordable(p) && <RecordPayment payout={p} onRecorded={onRecorded} /> },
  ];
}

/** "Record bank payment", then the payment's reference and "Record as sent". */
function RecordPayment({ payout, onRecorded }: { payout: Payout; onRecorded: (p: Payout) => void }) {
  const [open, setOpen] = useState(false);
  const [reference, setReference] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const record = useMutation(RecordManualPayout);
  const opener = `record-open-${payout.id}`;
  const input = `record-reference-${payout.id}`;
  const opened = useRef(false);
  // Opened: the focus goes to the reference; cancelled: back to the button.
  useEffect(() => {
    if (open) document.getElementById(input)?.focus();
    else if (opened.current) document.getElementById(opener)?.focus();
    opened.current = open;
  }, [open]);
  const submit = async (e: Event) => {
    e.preventDefault();
    const typed = reference.trim();
    setProblem(typed ? null : 'Enter what the bank payment is found by (its reference).');
    if (!typed) return;
    const r = await record.run({ payoutId: payout.id, reference: typed });
    if (r) onRecorded(r.recordManualPayout);
  };
  const cancel = () => {
    setOpen(false);
    setProblem(null);
    record.reset();
  };
  const escape = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && !record.pending) cancel();
  };
  const what = `payout ${payout.number}`;
  if (!open) {
    return (
      <Button small variant="primary" id={opener} onClick={() => setOpen(true)} aria-label={`Record bank payment of ${what}`}>
        Record bank payment
      </Button>
    );
  }
  return (
    <form class="inline-form" onSubmit={submit} onKeyDown={escape} noValidate aria-label={`Record bank payment of ${what}`}>
      <Field label="Bank reference" id={input} name="reference" error={record.error} message={problem} hint={`What the payment is found by on the bank statement (at most ${MAX_REFERENCE} characters).`}>
        {(p) => <input {...p} type="text" autocomplete="off" spellcheck={false} maxLength={MAX_REFERENCE} value={reference} onInput={(e) => setReference(e.currentTarget.value)} />}
      </Field>
      <div class="inline-actions">
        <Button type="submit" small variant="primary" pending={record.pending}>
          Record as sent
        </Button>
        <Button small variant="ghost" disabled={record.pending} onClick={cancel}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={unclaimed(record.error, ['reference'])} />
    </form>
  );
}
