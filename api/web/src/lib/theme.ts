/**
 * Light and dark themes. Without a stored choice the page follows the system's
 * `prefers-color-scheme`; a choice made with the toggle is kept in localStorage.
 */

export type Theme = 'light' | 'dark';

const KEY = 'neocloud.theme';

function stored(): Theme | null {
  try {
    const value = window.localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : null;
  } catch {
    return null;
  }
}

function systemTheme(): Theme {
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function currentTheme(): Theme {
  return stored() ?? systemTheme();
}

/** Sets the theme on <html data-theme> (the stylesheet reads it). */
export function applyTheme(theme: Theme = currentTheme()): void {
  document.documentElement.dataset['theme'] = theme;
}

export function chooseTheme(theme: Theme): void {
  try {
    window.localStorage.setItem(KEY, theme);
  } catch {
    // Private mode: the choice lasts for this page only.
  }
  applyTheme(theme);
}
