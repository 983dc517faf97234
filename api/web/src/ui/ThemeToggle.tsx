import { useState } from 'preact/hooks';
import { chooseTheme, currentTheme } from '../lib/theme';

/** Switches between the light and dark theme; the choice is remembered. */
export function ThemeToggle() {
  const [theme, setTheme] = useState(currentTheme());
  const dark = theme === 'dark';
  const toggle = () => {
    const next = dark ? 'light' : 'dark';
    chooseTheme(next);
    setTheme(next);
  };
  return (
    <button type="button" class="btn btn-ghost btn-small theme-toggle" aria-pressed={dark} onClick={toggle}>
      <span aria-hidden="true" class="theme-icon">
        {dark ? '☾' : '☀'}
      </span>
      Dark theme
    </button>
  );
}
