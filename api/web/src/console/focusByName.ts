import type { RefObject } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * Focus for rows that come and go: the setter names a control (its `name`) within `root`,
 * focused after the next render, once the row it is in exists.
 */
export function useFocusByName(root: RefObject<HTMLElement | null>): (name: string) => void {
  const [name, setName] = useState<string | null>(null);
  useEffect(() => {
    if (name === null) return;
    root.current?.querySelector<HTMLElement>(`[name="${name}"]`)?.focus();
    setName(null);
  }, [name]);
  return setName;
}
