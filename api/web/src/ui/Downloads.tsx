interface DownloadsProps {
  /** The export's path (cookie auth): `?format=…` is added per format. */
  base: string;
  /** What is downloaded ("invoice INV-0001"), for screen readers. */
  what: string;
  /** [format as the export takes it, label]. */
  formats: readonly (readonly [string, string])[];
  /** "Download PDF" as the visible text (else just "PDF", named in full for screen readers). */
  full?: boolean | undefined;
}

/** Same-origin download links of one document's export formats: /…/export?format=… */
export function Downloads({ base, what, formats, full }: DownloadsProps) {
  return (
    <span class="downloads">
      {formats.map(([format, label]) => (
        <a key={format} class="download" href={`${base}?format=${format}`} download aria-label={full ? undefined : `Download ${label} of ${what}`}>
          {full ? `Download ${label}` : label}
        </a>
      ))}
    </span>
  );
}
