import '../ui/styles.css';
import { render } from 'preact';
import { setBase } from '../lib/router';
import { applyTheme } from '../lib/theme';
import { AppShell } from '../ui/AppShell';
import { setAppTitle } from '../ui/Page';
import { portal } from './app';

applyTheme();
setBase('/portal');
setAppTitle('neocloud portal');
const root = document.getElementById('app');
if (root) render(<AppShell config={portal} />, root);
