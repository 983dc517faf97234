import { useState } from 'preact/hooks';
import { Button } from './Button';

/** Copies `text` to the clipboard and says so (or how to copy by hand when it cannot). */
export function CopyButton({ text, label = 'Copy', what }: { text: string; label?: string; what?: string }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <>
      <Button onClick={copy} aria-label={what ? `${label} ${what}` : undefined}>
        {label}
      </Button>
      <span class="copy-status muted small" role="status">
        {copied === true ? 'Copied to the clipboard.' : copied === false ? 'Could not copy: select the text and press Ctrl+C (⌘C).' : ''}
      </span>
    </>
  );
}
