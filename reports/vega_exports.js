// The part of the `vega` package's index that podsim's reports use: the transforms registered
// with the dataflow (as vega/index.js does), the parser and the view.
var vega = (function (modules) {
  modules['vega-util'].extend(modules['vega-dataflow'].transforms, modules['vega-transforms'],
                              modules['vega-view-transforms'], modules['vega-encode']);
  return {parse: modules['vega-parser'].parse, View: modules['vega-view'].View,
          version: 'libjs-vega (Debian)'};
})(podsimModules);
define = undefined;
