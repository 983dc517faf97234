import { useState } from 'preact/hooks';
import { Notice } from './Notice';

/** A one-time message carried across a navigation ("Order placed"). */
let pending: string | null = null;

export function setFlash(message: string): void {
  pending = message;
}

function takeFlash(): string | null {
  const message = pending;
  pending = null;
  return message;
}

/** Shows the message the previous page left (once). */
export function Flash() {
  const [message] = useState(takeFlash);
  return message ? <Notice tone="success">{message}</Notice> : null;
}
