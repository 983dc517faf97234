import '../ui/styles.css';
import { render } from 'preact';
import { setBase } from '../lib/router';
import { applyTheme } from '../lib/theme';
import { AppShell } from '../ui/AppShell';
import { setAppTitle } from '../ui/Page';
import { providerApp } from './app';

applyTheme();
setBase('/provider');
setAppTitle('neocloud provider console');
const root = document.getElementById('app');
if (root) render(<AppShell config={providerApp} />, root);
