import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { Button } from './Button';
import { Notice } from './Notice';

interface SecretOnceProps {
  /** What it is ("New API key"): the field's label. */
  label: string;
  value: string;
  /** What to do with it (after "Shown once: copy it now."). */
  note: string;
  onDone: () => void;
}

/**
 * A secret the API returns once (a new key, an invitation link, a signing secret): a
 * read-only field to copy it from, a copy button, and a clear "shown once" warning.
 */
export function SecretOnce({ label, value, note, onDone }: SecretOnceProps) {
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<boolean | null>(null);
  // The form that asked for it is gone: the focus goes to the secret (selected).
  useEffect(() => field.current?.focus(), []);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      field.current?.select();
      setCopied(false);
    }
  };
  return (
    <div class="secret">
      <Notice tone="warning" title="Shown once: copy it now">
        <p>{note} It cannot be shown again; if it is lost, make a new one.</p>
      </Notice>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input ref={field} id={id} type="text" readOnly value={value} spellcheck={false} autocomplete="off" onFocus={(e) => e.currentTarget.select()} />
        <Button onClick={copy}>Copy</Button>
      </div>
      <p class="field-hint" role="status">
        {copied === true ? 'Copied to the clipboard.' : copied === false ? 'Selected: press Ctrl+C (⌘C) to copy.' : ''}
      </p>
      <Button variant="primary" small onClick={onDone}>
        I have copied it
      </Button>
    </div>
  );
}
