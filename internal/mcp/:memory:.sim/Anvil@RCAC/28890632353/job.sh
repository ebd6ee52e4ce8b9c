#!/bin/sh
sleep 1; echo hi from mosaic
