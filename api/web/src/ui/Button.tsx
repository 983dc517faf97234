import type { ButtonHTMLAttributes, ComponentChildren } from 'preact';

type Variant = 'primary' | 'secondary' | 'danger' | 'ghost';

export type ButtonProps = ButtonHTMLAttributes<HTMLButtonElement> & {
  variant?: Variant;
  /** A request runs: the button is disabled and shows a spinner (its name stays). */
  pending?: boolean;
  small?: boolean;
  children: ComponentChildren;
};

/** A real <button>: pending while its request runs, disabled meanwhile. */
export function Button({ variant = 'secondary', pending = false, small = false, disabled, children, class: cls, type, ...rest }: ButtonProps) {
  const classes = ['btn', `btn-${variant}`, small ? 'btn-small' : '', pending ? 'is-pending' : '', typeof cls === 'string' ? cls : '']
    .filter(Boolean)
    .join(' ');
  return (
    <button {...rest} type={type ?? 'button'} class={classes} disabled={disabled || pending} aria-busy={pending || undefined}>
      {pending && <span class="spinner" aria-hidden="true" />}
      {children}
    </button>
  );
}
