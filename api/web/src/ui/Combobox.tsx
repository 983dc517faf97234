import { useEffect, useId, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import type { ApiError } from '../lib/api';
import { moveActive } from '../lib/picker';
import { Field } from './Field';

interface ComboboxProps<T> {
  label: string;
  /** The input's name, matched against the server's `extensions.field`. */
  name: string;
  hint?: ComponentChildren;
  error?: ApiError | null;
  message?: string | null;
  /** What is typed (the owner searches with it). */
  text: string;
  onText: (text: string) => void;
  /** The matches to offer for `text`. */
  options: readonly T[];
  optionKey: (option: T) => string;
  optionLabel: (option: T) => string;
  onChoose: (option: T) => void;
  /** Whether the matches show (typing, a click, or Down opens them; Escape, Tab and a choice close them). */
  open: boolean;
  onOpenChange: (open: boolean) => void;
  /** A search runs (or waits to): the status line shows a spinner. */
  pending: boolean;
  /** The status line under the input while open ("Searching…", "No tenant matches", …). */
  status: string;
  maxLength?: number;
  placeholder?: string;
}

/**
 * A text input that searches as one types and offers the matches to choose from (the
 * WAI-ARIA combobox with a list popup): Down and Up move through them, Enter chooses,
 * Escape closes them (and, closed, clears the text), a click chooses. The focus stays in
 * the input; the matches' count is announced.
 */
export function Combobox<T>({ label, name, hint, error, message, text, onText, options, optionKey, optionLabel, onChoose, open, onOpenChange, pending, status, maxLength, placeholder }: ComboboxProps<T>) {
  const [active, setActive] = useState(-1);
  const listId = useId();
  const list = useRef<HTMLUListElement>(null);
  const keys = options.map(optionKey).join('\n');
  // New matches: none is active until Down or Up.
  useEffect(() => setActive(-1), [keys]);
  const expanded = open && options.length > 0;
  const activeId = expanded && active >= 0 && active < options.length ? `${listId}-${active}` : undefined;
  useEffect(() => {
    if (activeId) list.current?.querySelector(`[id="${activeId}"]`)?.scrollIntoView({ block: 'nearest' });
  }, [activeId]);

  const choose = (option: T) => {
    onChoose(option);
    onOpenChange(false);
    setActive(-1);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    switch (e.key) {
      case 'ArrowDown':
      case 'ArrowUp':
        e.preventDefault();
        if (!open) onOpenChange(true);
        if (!e.altKey) setActive((a) => moveActive(a, options.length, e.key as 'ArrowDown' | 'ArrowUp'));
        return;
      case 'Enter': {
        // Enter here chooses (the active match, or the only one); it never submits the form.
        e.preventDefault();
        const only = !pending && options.length === 1 ? options[0] : undefined;
        const chosen = activeId ? options[active] : open ? only : undefined;
        if (chosen !== undefined) choose(chosen);
        return;
      }
      case 'Escape':
        if (open) {
          e.preventDefault();
          onOpenChange(false);
          setActive(-1);
        } else if (text) {
          e.preventDefault();
          onText('');
        }
        return;
      case 'Tab':
        if (open) onOpenChange(false);
        return;
    }
  };

  return (
    <Field label={label} name={name} hint={hint} error={error} message={message}>
      {(p) => (
        <div class="combobox">
          <input
            {...p}
            type="text"
            role="combobox"
            autocomplete="off"
            spellcheck={false}
            maxLength={maxLength}
            placeholder={placeholder}
            aria-autocomplete="list"
            aria-expanded={expanded}
            aria-controls={expanded ? listId : undefined}
            aria-activedescendant={activeId}
            value={text}
            onInput={(e) => {
              onText(e.currentTarget.value);
              if (!open) onOpenChange(true);
              setActive(-1);
            }}
            onKeyDown={onKeyDown}
            onClick={() => !open && onOpenChange(true)}
            onBlur={() => open && onOpenChange(false)}
          />
          {/* Always there (empty while closed), so that what its status says is announced;
              a press in it leaves the focus in the input, so that a click can choose. */}
          <div class={open ? 'combobox-popup is-open' : 'combobox-popup'} onMouseDown={(e) => e.preventDefault()}>
            <p class="combobox-status" role="status">
              {open && pending && <span class="spinner" aria-hidden="true" />}
              {open ? status : ''}
            </p>
            {expanded && (
              <ul ref={list} id={listId} role="listbox" aria-label={`${label}: matches`} class="combobox-list">
                {options.map((option, i) => (
                  <li key={optionKey(option)} id={`${listId}-${i}`} role="option" aria-selected={i === active} class={i === active ? 'combobox-option is-active' : 'combobox-option'} onClick={() => choose(option)}>
                    {optionLabel(option)}
                  </li>
                ))}
              </ul>
            )}
          </div>
        </div>
      )}
    </Field>
  );
}
