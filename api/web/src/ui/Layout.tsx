import type { ComponentChildren } from 'preact';
import { Button } from './Button';
import { Link } from './Link';
import { ThemeToggle } from './ThemeToggle';
import { roleLabel, type Viewer } from './viewer';

export interface NavItem {
  to: string;
  label: string;
  /** Whether the item is the current section (defaults to a prefix match). */
  current?: (path: string) => boolean;
}

interface LayoutProps {
  appName: string;
  nav: NavItem[];
  path: string;
  viewer: Viewer;
  signingOut: boolean;
  onSignOut: () => void;
  /** Above the page, below the header (e.g. the suspension banner). */
  banner?: ComponentChildren;
  children: ComponentChildren;
}

/** The signed-in frame: skip link, header, main navigation and the main landmark. */
export function Layout({ appName, nav, path, viewer, signingOut, onSignOut, banner, children }: LayoutProps) {
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="header">
        <div class="header-inner">
          <Link to="/" class="brand">
            <span class="brand-mark" aria-hidden="true" />
            neocloud <span class="brand-app">{appName}</span>
          </Link>
          <div class="header-tools">
            <p class="whoami">
              <span class="sr-only">Signed in as </span>
              {viewer.email ? <span class="email">{viewer.email}</span> : null}
              {viewer.tenant ? <strong>{viewer.tenant.name}</strong> : null}
              <span class="role">{roleLabel(viewer.role)}</span>
            </p>
            <ThemeToggle />
            <Button small variant="ghost" onClick={onSignOut} pending={signingOut}>
              Sign out
            </Button>
          </div>
        </div>
        <nav class="nav" aria-label="Main">
          <ul>
            {nav.map((item) => (
              <li key={item.to}>
                <Link to={item.to} aria-current={isCurrent(item, path) ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      {banner}
      <main id="main" class="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

function isCurrent(item: NavItem, path: string): boolean {
  if (item.current) return item.current(path);
  if (item.to === '/') return path === '/';
  return path === item.to || path.startsWith(`${item.to}/`);
}
