import type { ComponentChildren } from 'preact';
import { href, navigate } from '../lib/router';

interface LinkProps {
  to: string;
  class?: string;
  'aria-current'?: 'page' | undefined;
  'aria-label'?: string;
  children: ComponentChildren;
}

/** An in-app link: a real <a href>, followed without a page load on a plain click. */
export function Link({ to, children, ...rest }: LinkProps) {
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(to);
  };
  return (
    <a {...rest} href={href(to)} onClick={onClick}>
      {children}
    </a>
  );
}
