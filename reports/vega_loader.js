// podsim's glue around Debian's libjs-vega (reports/bundle_vega.cmake concatenates it with the
// package's UMD modules): the modules are built for Node's require or an AMD loader, and their
// browser-global fallback replaces `vega` for each module, so a page cannot load them as they are.
// This is the smallest AMD loader they need: each module calls define(deps, factory) once, in
// dependency order, and the bundle names it (podsimModule) just before.
var podsimModules = {};
var podsimModule = null;
function define(deps, factory) {
  var exports = {};
  var args = deps.map(function (name) {
    if (name === 'exports') return exports;
    if (!(name in podsimModules)) throw new Error('vega bundle: ' + podsimModule + ' needs ' + name);
    return podsimModules[name];
  });
  var result = factory.apply(null, args);
  podsimModules[podsimModule] = result || exports;
}
define.amd = true;
