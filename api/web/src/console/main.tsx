import '../ui/styles.css';
import { render } from 'preact';
import { setBase } from '../lib/router';
import { applyTheme } from '../lib/theme';
import { AppShell } from '../ui/AppShell';
import { setAppTitle } from '../ui/Page';
import { consoleApp } from './app';

applyTheme();
setBase('/console');
setAppTitle('neocloud console');
const root = document.getElementById('app');
if (root) render(<AppShell config={consoleApp} />, root);
