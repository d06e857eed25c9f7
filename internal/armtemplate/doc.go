// Package armtemplate evaluates Azure Resource Manager (ARM) JSON templates:
// the template language that `az deployment group create` sends to
// Microsoft.Resources/deployments.
//
// It is a pure evaluator. Given a template, parameter values and a Scope
// (subscription, resource group, deployment name), it binds and validates
// parameters, evaluates variables (including copy), expands resource copy
// loops, conditions and child resources, computes each resource's ID and
// dependencies, orders resources for deployment, evaluates resource bodies and
// outputs, and runs nested inline deployments (inner and outer expression
// scope).
//
// What depends on the world — reference() and the state of resources
// deployed earlier in the same deployment — is asked of the caller through
// the Resources and Deployer interfaces, so the package does no I/O of its own
// and has no notion of the fabric that serves it. Two drivers are provided:
// Deploy evaluates each resource only after its dependencies were deployed
// and hands it to the Deployer; WhatIf evaluates every resource without
// deploying, leaving a property whose value needs reference() to a resource of
// the same deployment as its unevaluated expression string, as Azure's
// what-if does. A caller that PUTs resources itself uses the step-wise API:
// Prepare (which is also ARM's validation) returns the steps in deployment
// order; Deployment.Evaluate evaluates one step once its dependencies are
// deployed, Deployment.Record stores what the deployment answered, and
// Deployment.Outputs evaluates the outputs at the end.
//
// Errors are *Error values carrying ARM's error code (InvalidTemplate) and
// ARM's wording, with line and column where ARM reports them.
//
// Deliberately not done, each rejected with an InvalidTemplate error naming
// the feature rather than producing a wrong result: templateLink (linked
// templates need the network), user-defined functions, languageVersion 2.0
// symbolic-name resources, cross-scope nested deployments (another
// subscription or resource group), list*() functions, lambda functions and any
// function this package does not implement.
package armtemplate
