import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

let appTitle = 'neocloud';
let firstPage = true;

export function setAppTitle(title: string): void {
  appTitle = title;
}

/** The document title of a screen: "<title> · <app>". */
export function pageTitle(title: string): string {
  return `${title} · ${appTitle}`;
}

interface PageProps {
  title: string;
  /** A line under the heading. */
  lead?: ComponentChildren;
  /** Buttons or links beside the heading. */
  actions?: ComponentChildren;
  children: ComponentChildren;
}

/**
 * A page: its <h1>, the document title, and after a navigation the focus on the
 * heading so screen readers announce the new page.
 */
export function Page({ title, lead, actions, children }: PageProps) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = pageTitle(title);
    if (firstPage) firstPage = false;
    else heading.current?.focus();
  }, [title]);
  return (
    <>
      <div class="page-head">
        <div>
          <h1 tabIndex={-1} ref={heading}>
            {title}
          </h1>
          {lead && <p class="lead">{lead}</p>}
        </div>
        {actions && <div class="page-actions">{actions}</div>}
      </div>
      {children}
    </>
  );
}

/** A titled section of a page. */
export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section class="section" aria-labelledby={id}>
      <div class="section-head">
        <h2 id={id}>{title}</h2>
        {actions}
      </div>
      {children}
    </section>
  );
}
