import { dateTime, enumLabel } from '../lib/format';
import { Badge, type Tone } from '../ui/Badge';

/** What a node says of its verification (`Node` and `ProviderNode` alike). */
export interface VerificationLike {
  verification: string;
  verificationReason: string | null;
  verifiedAt: string | null;
}

function verificationTone(verification: string): Tone {
  if (verification === 'MISMATCH') return 'bad';
  return verification === 'PENDING' ? 'info' : 'good';
}

/** The verification as a badge, what differs while MISMATCH and when it was last verified. */
export function VerificationStatus({ node: n }: { node: VerificationLike }) {
  return (
    <span class="cell-stack">
      <Badge tone={verificationTone(n.verification)}>{enumLabel(n.verification)}</Badge>
      {n.verificationReason && <span class="small">{n.verificationReason}</span>}
      {n.verifiedAt && <span class="muted small">{`Last verified ${dateTime(n.verifiedAt)}`}</span>}
    </span>
  );
}

const EVENT_KINDS: Record<string, string> = { xid: 'XID', ecc_single_bit: 'ECC single-bit', ecc_double_bit: 'ECC double-bit' };

/** A health event's kind ("xid", "ecc_double_bit") in words ("XID", "ECC double-bit"). */
export function eventKindLabel(kind: string): string {
  return EVENT_KINDS[kind] ?? kind;
}
