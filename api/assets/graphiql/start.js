// Starts GraphiQL against this server's /graphql. Every asset is served by the binary
// itself: nothing is loaded from elsewhere. Paste an API key into the Headers tab:
// {"Authorization": "Bearer nck_…"}.
(function () {
  var fetcher = GraphiQL.createFetcher({ url: "/graphql" });
  var root = ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultEditorToolsVisibility: true,
      defaultHeaders: '{"Authorization": "Bearer "}',
    })
  );
})();
