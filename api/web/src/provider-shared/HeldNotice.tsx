import type { ComponentChildren } from 'preact';
import { Notice } from '../ui/Notice';
import { readableReason, type StatementHoldLike } from './statementHold';

interface HeldNoticeProps {
  hold: StatementHoldLike | null | undefined;
  title?: string | undefined;
  /** What happens next, after the reason. */
  children?: ComponentChildren;
}

/** Why a provider's next statement has not closed (`Provider.statementHeld`); nothing when nothing holds it. */
export function HeldNotice({ hold, title = 'The next statement is held', children }: HeldNoticeProps) {
  if (!hold) return null;
  return (
    <Notice tone="warning" title={title}>
      <p>{readableReason(hold.reason)}</p>
      {children}
    </Notice>
  );
}
