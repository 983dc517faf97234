import { defineConfig } from 'vite';

// Three apps, one bundle: dist/portal.html, dist/console.html and dist/provider.html share
// dist/assets/. The server serves the HTML at /portal/*, /console/* and /provider/*, the
// assets at /ui/.
export default defineConfig({
  base: '/ui/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    // No inline polyfill or data: URL assets: the page runs under a strict CSP.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rollupOptions: {
      input: {
        portal: 'portal.html',
        console: 'console.html',
        provider: 'provider.html',
      },
      output: {
        // What the apps share (Preact, the UI kit, the client) and its stylesheet.
        chunkFileNames: 'assets/shared-[hash].js',
        assetFileNames: (asset) => (asset.names[0]?.endsWith('.css') ? 'assets/styles-[hash][extname]' : 'assets/[name]-[hash][extname]'),
      },
    },
  },
});
