import { OwnSecurityPage } from '../../people/OwnSecurityPage';

/** The signed-in person's second factor (the page is the portal's Account → Security). */
export function SecurityPage() {
  return (
    <OwnSecurityPage
      lead="How you sign in to this console: your password, and a second factor if you turn it on."
      keysPath="/keys"
      forgotten="Forgotten it? Anyone else of your provider can give you a link to set a new one (People → Reset password)."
      resetBy="someone else of your provider"
    />
  );
}
