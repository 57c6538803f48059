// Package yamlfile reads the harness's YAML files (scenarios, target files,
// baselines, the gateway's config) one way: a read bounded in size, a parse
// that bounds what aliases may expand to and resolves them across the whole
// document, strict decoding into a typed value, and every problem an *Error
// naming the file, line and column with the source line under it.
//
// A format loads a file with ReadFile and Decode, or, to look at or edit the
// tree first, with ReadFile, Parse (or ParseDocument) and DecodeNode, finding
// the node a later check blames with At.
package yamlfile
