import { Link } from './Link';

/** Tabs between the pages of one area (e.g. the portal's account pages). */
export function SubNav({ label, items, path }: { label: string; items: { to: string; label: string }[]; path: string }) {
  return (
    <nav class="subnav" aria-label={label}>
      <ul>
        {items.map((item) => (
          <li key={item.to}>
            <Link to={item.to} aria-current={path === item.to ? 'page' : undefined}>
              {item.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}
