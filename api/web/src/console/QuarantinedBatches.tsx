import { dateTime } from '../lib/format';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice } from '../ui/Notice';
import { Section } from '../ui/Page';
import { type IngestHealthResult, RequeueQuarantinedBatch } from './operations';

type Batch = IngestHealthResult['ingestHealth']['quarantined'][number];

interface Props {
  batches: Batch[];
  host: (nodeId: string) => string;
  onRequeued: () => void;
}

/** Batches set aside (newest first), per node; requeue one once its cause is fixed. */
export function QuarantinedBatches({ batches, host, onRequeued }: Props) {
  const columns: Column<Batch>[] = [
    { header: 'Node', cell: (b) => <strong>{host(b.nodeId)}</strong> },
    { header: 'Quarantined', cell: (b) => dateTime(b.quarantinedAt) },
    { header: 'Reason', cell: (b) => b.reason },
    { header: 'Batch', cell: (b) => <code class="muted">{b.batchId}</code> },
    { header: 'Actions', hiddenHeader: true, cell: (b) => <Requeue batch={b} onRequeued={onRequeued} /> },
  ];
  const sorted = [...batches].sort((a, b) => host(a.nodeId).localeCompare(host(b.nodeId)));
  return (
    <Section title="Quarantined batches">
      <DataTable caption="Quarantined batches by node" hideCaption columns={columns} rows={sorted} rowKey={(b) => b.batchId} empty="No batch is quarantined." />
    </Section>
  );
}

function Requeue({ batch, onRequeued }: { batch: Batch; onRequeued: () => void }) {
  const requeue = useMutation(RequeueQuarantinedBatch);
  const run = async () => {
    if (await requeue.run({ batchId: batch.batchId })) onRequeued();
  };
  return (
    <div class="inline-actions">
      <Button small pending={requeue.pending} onClick={run} aria-label={`Requeue batch ${batch.batchId}`}>
        Requeue
      </Button>
      <ErrorNotice error={requeue.error} />
    </div>
  );
}
