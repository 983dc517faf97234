import type { ComponentChildren, JSX } from 'preact';
import { useId } from 'preact/hooks';
import { type ApiError, isFieldError } from '../lib/api';

/** What a field's control gets: its id and the ARIA that ties it to hint and error. */
export interface ControlProps {
  id: string;
  name: string;
  'aria-invalid'?: boolean;
  'aria-describedby'?: string;
}

interface FieldProps {
  label: string;
  /** A fixed id for the control (to focus it from elsewhere); else a generated one. */
  id?: string;
  /** The input's name, matched against the server's `extensions.field`. */
  name: string;
  hint?: ComponentChildren;
  /** The form's last error: shown here when it is about this field. */
  error?: ApiError | null;
  /** A message of the form's own checks (shown when set). */
  message?: string | null;
  children: (control: ControlProps) => JSX.Element;
}

/** A labelled form control with its hint and, when there is one, its error. */
export function Field({ label, id: fixedId, name, hint, error, message, children }: FieldProps) {
  const generated = useId();
  const id = fixedId ?? generated;
  const problem = message ?? (isFieldError(error, name) ? error?.message : null);
  const described = [hint ? `${id}-hint` : '', problem ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class={`field${problem ? ' has-error' : ''}`}>
      <label for={id}>{label}</label>
      {children({ id, name, 'aria-invalid': problem ? true : undefined, 'aria-describedby': described || undefined })}
      {hint && (
        <p class="field-hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {problem && (
        <p class="field-error" id={`${id}-error`}>
          {problem}
        </p>
      )}
    </div>
  );
}

/** The error when no field of `names` shows it (so the form shows it once, above its button). */
export function unclaimed(error: ApiError | null | undefined, names: readonly string[]): ApiError | null {
  if (!error) return null;
  return names.some((n) => isFieldError(error, n)) ? null : error;
}
