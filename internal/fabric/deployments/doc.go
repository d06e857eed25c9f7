// Package deployments is the fabric's Microsoft.Resources/deployments
// provider at resource-group scope: ARM template deployments as
// `az deployment group create|validate|what-if|list|show|delete` and the
// SDK's DeploymentsClient drive them.
//
// A deployment's template is evaluated by internal/armtemplate; every
// resource it declares is sent through the fabric's whole request pipeline
// as the deploying principal (Dispatcher, which *fabric.Server satisfies):
// validation, authorization (role assignments, join actions, locks, deny
// policies), injected faults and the long-running operation, which the
// deployment polls through the pipeline too. A deployment can therefore
// never do what the same direct calls could not.
//
// Served (deploy.go, list.go, whatif.go):
//
//	PUT    .../deployments/{name}                     201/200 with Azure-AsyncOperation; Accepted → Running → Succeeded|Failed
//	GET    .../deployments/{name}, HEAD (204/404), GET .../deployments (list)
//	DELETE .../deployments/{name}                     202 with Location, then 204 (the record only)
//	GET    .../deployments/{name}/operationStatuses/{id}   the Azure-AsyncOperation poll
//	GET    .../deployments/{name}/operations[/{id}]   one operation per resource (Create, Delete)
//	POST   .../deployments/{name}/validate            200 with the validated resources, 400 InvalidTemplate
//	POST   .../deployments/{name}/whatIf              202 with Location; the Location answers 202, then
//	                                                  200 WhatIfOperationResult (changes with before,
//	                                                  after and delta)
//	POST   .../deployments/{name}/cancel, exportTemplate
//
// Modes: Incremental, and Complete, which after the template's resources
// deletes the group's resources the template does not declare, through
// the pipeline too (a route table still on a subnet cannot be deleted).
// Nested inline deployments run in place and are kept as deployments of
// their own, as ARM keeps them. Errors are ARM's: InvalidTemplate with the
// line and column (additionalInfo TemplateViolation), DeploymentFailed with
// the failed operations' errors as details, DeploymentActive, a missing
// parameter, a circular dependency.
//
// State: the deployments, their operations and what-if results are rows
// of tables of this package's own in the fabric's store. A deployment runs
// in the process that accepted it: with a zero operation duration within
// the request (the answer keeps ARM's shape), otherwise in the background.
package deployments
